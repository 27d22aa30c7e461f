// NumPy .npy arrays (format versions 1.0, 2.0 and 3.0), read by offset: the header is parsed
// when the file is opened, rows (index along the first axis) are read as they are asked for,
// never the whole array at once.
//
// Supported element types: little-endian float32 '<f4', float64 '<f8', int32 '<i4', int64
// '<i8', uint8 '|u1' (or '<u1'), in C order. Refused, as InputError("<file>: <what>"): a bad
// magic string, an unknown version, a header that is not the dict numpy writes ({'descr': ...,
// 'fortran_order': ..., 'shape': (...)}), any other dtype (big-endian '>f4', objects '|O',
// structured), fortran_order True, and a file whose size is not the header plus the data the
// shape says (truncated, or trailing bytes). Reading is thread-compatible (const, pread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/data/read_only_file.h"

namespace pw::exec {

enum class NpyType { f32, f64, i32, i64, u8 };

struct NpyHeader {
  NpyType type = NpyType::f32;
  std::string descr;           // as written, e.g. "<f4"
  std::vector<int64_t> shape;  // empty: a scalar
  uint64_t data_offset = 0;    // bytes before the data
  int64_t item_bytes() const;
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  int64_t row_elements() const;  // elements of one row (the product of shape[1:])
};

// The header of a .npy file whose first bytes are `head` (at most the whole file; the header's
// length field says how much is needed: InputError when `head` is shorter). `file` names it.
NpyHeader parse_npy_header(const std::string& head, const std::string& file);

// "[N, 3, 32, 32]" style text of a shape.
std::string shape_text(const std::vector<int64_t>& shape);

class NpyFile {
 public:
  // Opens and checks the file (header, dtype, size); InputError("<file>: <what>").
  explicit NpyFile(const std::string& file);
  const NpyHeader& header() const { return header_; }
  const std::string& name() const { return file_.name(); }
  // Rows [first, first + count) as floats into out[count * row_elements]; uint8 values divided
  // by 255 when `scale_u8` (pixels to [0, 1]), else as they are.
  void read_rows(int64_t first, int64_t count, float* out, bool scale_u8) const;

 private:
  ReadOnlyFile file_;
  NpyHeader header_;
};

}  // namespace pw::exec
