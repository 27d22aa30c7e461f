// The .npy reader (exec/data/npy.h): versions 1.0 and 2.0, the supported dtypes read as floats,
// and one clear error for each malformation.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "exec/data/npy.h"
#include "models/error.h"
#include "tests/exec/data/sample_files.h"

namespace pw::exec {

using test::npy_bytes;
using test::npy_header;
using test::SampleFilesDir;

TEST_CASE("npy: a float32 array, version 1.0 and 2.0, read row by row") {
  SampleFilesDir dir;
  const std::vector<float> v{0, 1, 2, 3, 4, 5};
  for (int major : {1, 2}) {
    NpyFile f(dir.write("a.npy", npy_bytes("<f4", {2, 3}, v, major)));
    CHECK(f.header().shape == std::vector<int64_t>{2, 3});
    CHECK(f.header().rows() == 2);
    CHECK(f.header().row_elements() == 3);
    CHECK(f.header().data_offset % 64 == 0);
    std::vector<float> row(3);
    f.read_rows(1, 1, row.data(), true);
    CHECK(row == std::vector<float>{3, 4, 5});
  }
}

TEST_CASE("npy: uint8 scaled to [0, 1] for inputs, int64 / int32 / float64 as they are") {
  SampleFilesDir dir;
  NpyFile u8(dir.write("u.npy", npy_bytes<uint8_t>("|u1", {3}, {0, 51, 255})));
  std::vector<float> out(3);
  u8.read_rows(0, 3, out.data(), true);
  CHECK(out == std::vector<float>{0.0f, 0.2f, 1.0f});
  u8.read_rows(0, 3, out.data(), false);
  CHECK(out == std::vector<float>{0, 51, 255});
  NpyFile i8(dir.write("l.npy", npy_bytes<int64_t>("<i8", {3}, {7, -2, 9})));
  i8.read_rows(0, 3, out.data(), true);
  CHECK(out == std::vector<float>{7, -2, 9});
  NpyFile i4(dir.write("i.npy", npy_bytes<int32_t>("<i4", {3, 1}, {1, 2, 3})));
  i4.read_rows(2, 1, out.data(), false);
  CHECK(out[0] == 3);
  NpyFile f8(dir.write("d.npy", npy_bytes<double>("<f8", {1}, {0.5})));
  f8.read_rows(0, 1, out.data(), false);
  CHECK(out[0] == 0.5f);
  CHECK(NpyFile(dir.write("s.npy", npy_bytes<float>("<f4", {}, {1.5f}))).header().rows() == 1);
}

TEST_CASE("npy: each malformation is one error naming the file and what is wrong") {
  SampleFilesDir dir;
  const std::vector<float> six(6, 1.0f);
  const std::string good = npy_bytes("<f4", {2, 3}, six);
  auto error_of = [&](const std::string& bytes) {
    const std::string f = dir.write("bad.npy", bytes);
    try {
      NpyFile file(f);
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK(what.rfind(f + ": ", 0) == 0);
      CHECK(what.find('\n') == std::string::npos);
      return what.substr(f.size() + 2);
    }
    return std::string("accepted");
  };
  CHECK(error_of("PK\x03\x04 not numpy at all") == "not a .npy file (bad magic: expected \\x93NUMPY)");
  std::string v4 = good;
  v4[6] = 4;
  CHECK(error_of(v4) == ".npy version 4.0 is not supported (1.0, 2.0 or 3.0 expected)");
  CHECK(error_of(good.substr(0, 40)) == "truncated .npy header");
  CHECK(error_of(npy_header("'descr': '<f4', 'shape': (2, 3), ") + std::string(24, '\0')) ==
        "bad .npy header: the header lacks 'descr', 'fortran_order' or 'shape'");
  CHECK(error_of(npy_header("'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), ") + std::string(24, '\0')) ==
        "fortran_order True is not supported (save a C-ordered array: np.ascontiguousarray)");
  CHECK(error_of(npy_bytes(">f4", {2, 3}, six)).rfind("dtype '>f4' is not supported (big-endian", 0) == 0);
  CHECK(error_of(npy_header("'descr': '|O', 'fortran_order': False, 'shape': (2,), ") + std::string(16, '\0'))
            .rfind("dtype '|O' is not supported (object arrays", 0) == 0);
  CHECK(error_of(npy_header("'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), ")) ==
        "bad .npy header: structured dtypes are not supported (a plain numeric array expected)");
  CHECK(error_of(npy_header("'descr': '<f4', 'fortran_order': False, 'shape': (2, x), ")) ==
        "bad .npy header: expected a dimension (a non-negative integer) at byte 54");
  CHECK(error_of(npy_header("'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1, ")) ==
        "bad .npy header: unexpected key 'extra' in the header");
  CHECK(error_of(good.substr(0, good.size() - 4)) ==
        "truncated: shape [2, 3] of '<f4' needs 152 bytes, the file has 148");
  CHECK(error_of(good + "xx") == "2 bytes after the data that shape [2, 3] holds");
  CHECK(error_of(good) == "accepted");
}

}  // namespace pw::exec
