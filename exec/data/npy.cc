#include "exec/data/npy.h"

#include <cstring>
#include <limits>

#include "models/error.h"

namespace pw::exec {

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
constexpr uint64_t kMaxHeaderBytes = 1 << 20;  // numpy writes a few hundred

// The header dict, a Python literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class DictParser {
 public:
  DictParser(const std::string& text, const std::string& file) : s_(text), file_(file) {}
  void parse(NpyHeader& h, bool& fortran) {
    expect('{');
    bool have_descr = false, have_order = false, have_shape = false;
    while (!peek('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        if (peek('[')) fail("structured dtypes are not supported (a plain numeric array expected)");
        h.descr = string_literal(), have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean(), have_order = true;
      } else if (key == "shape") {
        h.shape = tuple(), have_shape = true;
      } else {
        fail("unexpected key '" + key + "' in the header");
      }
      if (!peek('}')) expect(',');
    }
    if (!have_descr || !have_order || !have_shape) fail("the header lacks 'descr', 'fortran_order' or 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(file_ + ": bad .npy header: " + what); }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_;
  }
  bool peek(char c) {
    skip();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "' at byte " + std::to_string(i_));
    ++i_;
  }
  std::string string_literal() {
    skip();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"'))
      fail("expected a quoted string at byte " + std::to_string(i_));
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    if (end == std::string::npos) fail("unterminated string");
    std::string v = s_.substr(i_, end - i_);
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    skip();
    if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    fail("expected True or False for 'fortran_order'");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (!peek(')')) {
      skip();
      int64_t v = 0;
      size_t digits = 0;
      for (; i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; ++i_, ++digits) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("a dimension is too large");
        v = v * 10 + (s_[i_] - '0');
      }
      if (digits == 0) fail("expected a dimension (a non-negative integer) at byte " + std::to_string(i_));
      if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2's long suffix
      dims.push_back(v);
      if (!peek(')')) expect(',');
    }
    ++i_;
    return dims;
  }

  const std::string& s_;
  const std::string& file_;
  size_t i_ = 0;
};

NpyType dtype_of(const std::string& d, const std::string& file) {
  if (d == "<f4") return NpyType::f32;
  if (d == "<f8") return NpyType::f64;
  if (d == "<i4") return NpyType::i32;
  if (d == "<i8") return NpyType::i64;
  if (d == "|u1" || d == "<u1" || d == "u1") return NpyType::u8;
  std::string why = "dtype '" + d + "' is not supported";
  if (!d.empty() && d[0] == '>') why += " (big-endian; save little-endian: arr.astype(arr.dtype.newbyteorder('<')))";
  else if (d.find('O') != std::string::npos) why += " (object arrays hold Python objects, not numbers)";
  throw InputError(file + ": " + why + "; expected '<f4', '<f8', '<i4', '<i8' or '|u1'");
}

}  // namespace

int64_t NpyHeader::item_bytes() const {
  switch (type) {
    case NpyType::f32:
    case NpyType::i32: return 4;
    case NpyType::f64:
    case NpyType::i64: return 8;
    case NpyType::u8: return 1;
  }
  return 1;
}

int64_t NpyHeader::row_elements() const {
  int64_t n = 1;
  for (size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

NpyHeader parse_npy_header(const std::string& head, const std::string& file) {
  if (head.size() < kMagicBytes + 4 || head.compare(0, kMagicBytes, kNpyMagic, kMagicBytes) != 0)
    throw InputError(file + ": not a .npy file (bad magic: expected \\x93NUMPY)");
  const auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(head[i])); };
  const uint64_t major = byte(6);
  if (major < 1 || major > 3)
    throw InputError(file + ": .npy version " + std::to_string(major) + "." + std::to_string(byte(7)) +
                     " is not supported (1.0, 2.0 or 3.0 expected)");
  const size_t len_at = 8, text_at = major == 1 ? 10 : 12;
  if (head.size() < text_at) throw InputError(file + ": truncated .npy header");
  uint64_t len = byte(len_at) | byte(len_at + 1) << 8;
  if (major > 1) len |= byte(len_at + 2) << 16 | byte(len_at + 3) << 24;
  if (len > kMaxHeaderBytes) throw InputError(file + ": bad .npy header: " + std::to_string(len) + " bytes long");
  if (head.size() < text_at + len) throw InputError(file + ": truncated .npy header");
  NpyHeader h;
  bool fortran = false;
  DictParser(head.substr(text_at, len), file).parse(h, fortran);
  h.type = dtype_of(h.descr, file);
  if (fortran)
    throw InputError(file + ": fortran_order True is not supported (save a C-ordered array: np.ascontiguousarray)");
  h.data_offset = text_at + len;
  return h;
}

NpyFile::NpyFile(const std::string& file) : file_(file) {
  const uint64_t want = std::min<uint64_t>(file_.size(), 12 + kMaxHeaderBytes);
  std::string head(want, '\0');
  file_.read_at(0, want, head.data());
  header_ = parse_npy_header(head, file);
  __int128 bytes = header_.item_bytes();
  for (int64_t d : header_.shape) {
    bytes *= d;
    if (bytes > (__int128{1} << 62)) throw InputError(file + ": shape " + shape_text(header_.shape) + " is too large");
  }
  const __int128 expected = bytes + static_cast<__int128>(header_.data_offset);
  if (static_cast<__int128>(file_.size()) < expected)
    throw InputError(file + ": truncated: shape " + shape_text(header_.shape) + " of '" + header_.descr + "' needs " +
                     std::to_string(static_cast<int64_t>(expected)) + " bytes, the file has " +
                     std::to_string(file_.size()));
  if (static_cast<__int128>(file_.size()) > expected)
    throw InputError(file + ": " + std::to_string(file_.size() - static_cast<uint64_t>(expected)) +
                     " bytes after the data that shape " + shape_text(header_.shape) + " holds");
}

void NpyFile::read_rows(int64_t first, int64_t count, float* out, bool scale_u8) const {
  const int64_t n = count * header_.row_elements(), item = header_.item_bytes();
  const uint64_t at = header_.data_offset + static_cast<uint64_t>(first * header_.row_elements() * item);
  if (header_.type == NpyType::f32) return file_.read_at(at, static_cast<uint64_t>(n * 4), out);
  std::vector<unsigned char> raw(static_cast<size_t>(n * item));
  file_.read_at(at, raw.size(), raw.data());
  const unsigned char* r = raw.data();
  for (int64_t i = 0; i < n; ++i) {  // little-endian host (x86-64, aarch64)
    switch (header_.type) {
      case NpyType::u8: out[i] = scale_u8 ? static_cast<float>(r[i]) / 255.0f : static_cast<float>(r[i]); break;
      case NpyType::i32: {
        int32_t v;
        std::memcpy(&v, r + 4 * i, 4);
        out[i] = static_cast<float>(v);
        break;
      }
      case NpyType::i64: {
        int64_t v;
        std::memcpy(&v, r + 8 * i, 8);
        out[i] = static_cast<float>(v);
        break;
      }
      case NpyType::f64: {
        double v;
        std::memcpy(&v, r + 8 * i, 8);
        out[i] = static_cast<float>(v);
        break;
      }
      case NpyType::f32: break;
    }
  }
}

}  // namespace pw::exec
