// Test helpers: write small .npy files (format 1.0 or 2.0, any descr) and CIFAR-10 binary
// records into a fresh temporary folder (removed with its contents on destruction). Used by
// tests/exec/data/ and the CLI data test (tests/tools/cli_data_test.cc).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace pw::test {

class SampleFilesDir {
 public:
  SampleFilesDir() {
    static std::atomic<int> n{0};
    path_ = std::filesystem::temp_directory_path() /
            ("pw_sample_files_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~SampleFilesDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  SampleFilesDir(const SampleFilesDir&) = delete;
  SampleFilesDir& operator=(const SampleFilesDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

// The header numpy writes: magic, version, length, the dict padded with spaces and '\n' to a
// multiple of 64 bytes. `dict` as written between the braces' contents, e.g.
// "'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ".
inline std::string npy_header(const std::string& dict, int major = 1) {
  std::string text = "{" + dict + "}";
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + text.size() + 1) % 64 != 0) text += ' ';
  text += '\n';
  std::string h = "\x93NUMPY";
  h += static_cast<char>(major);
  h += '\0';
  const uint32_t len = static_cast<uint32_t>(text.size());
  h += static_cast<char>(len & 0xff);
  h += static_cast<char>((len >> 8) & 0xff);
  if (major > 1) {
    h += static_cast<char>((len >> 16) & 0xff);
    h += static_cast<char>((len >> 24) & 0xff);
  }
  return h + text;
}

inline std::string shape_tuple(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (int64_t d : shape) s += std::to_string(d) + ", ";
  if (shape.size() > 1) s.resize(s.size() - 2);
  if (shape.size() == 1) s.resize(s.size() - 1);
  return s + ")";
}

// A whole .npy file of `values` (raw little-endian bytes of the element type `descr`).
template <typename T>
std::string npy_bytes(const std::string& descr, const std::vector<int64_t>& shape, const std::vector<T>& values,
                      int major = 1) {
  std::string data(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
  return npy_header("'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", ", major) +
         data;
}

// One CIFAR-10 record: label, then 3072 pixel bytes.
inline std::string cifar_record(uint8_t label, const std::vector<uint8_t>& pixels) {
  std::string r(1, static_cast<char>(label));
  r.append(reinterpret_cast<const char*>(pixels.data()), pixels.size());
  return r;
}

}  // namespace pw::test
