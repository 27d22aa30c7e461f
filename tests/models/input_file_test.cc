// models/input_file.h: the one reader entry point refuses what is not a regular file, caps the
// size, and reads regular files whole.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "models/error.h"
#include "models/input_file.h"
#include "models/json_util.h"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("pw_input_file_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

std::string message_of(const std::string& file, uint64_t limit = pw::kMaxInputFileBytes) {
  try {
    pw::read_input_file(file, limit);
  } catch (const pw::InputError& e) { return e.what(); }
  return "";
}

}  // namespace

TEST_CASE("read_input_file: regular files are read whole, size cap is exact") {
  TempDir d;
  const std::string f = d.write("a.txt", "hello\nworld");
  CHECK(pw::read_input_file(f) == "hello\nworld");
  CHECK(pw::read_input_file(f, 11) == "hello\nworld");
  CHECK(message_of(f, 10) == f + ": 11 bytes, more than the 10 bytes limit of an input file");
}

TEST_CASE("read_input_file: directories, devices, FIFOs, missing and empty files are one-line errors") {
  TempDir d;
  CHECK(message_of(d.path.string()) == d.path.string() + ": is a directory");
  CHECK(message_of("/dev/zero").rfind("/dev/zero: not a regular file", 0) == 0);
  CHECK(message_of("/dev/urandom").rfind("/dev/urandom: not a regular file", 0) == 0);
  const std::string fifo = (d.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(message_of(fifo).rfind(fifo + ": not a regular file", 0) == 0);  // does not block
  CHECK(message_of((d.path / "missing").string()).rfind((d.path / "missing").string() + ": cannot open", 0) == 0);
  CHECK(message_of(d.write("empty", "")) == d.path.string() + "/empty: file is empty");
  CHECK(message_of(d.write("new\nline", "x")).find('\n') == std::string::npos);
}

TEST_CASE("load_json_file: nesting deeper than 1000 levels is rejected before parsing") {
  TempDir d;
  const std::string deep = d.write("deep.json", std::string(100000, '[') + std::string(100000, ']'));
  CHECK_THROWS_WITH_AS(pw::load_json_file(deep),
                       (deep + ": invalid JSON at line 1, byte 1001: nested more than 1000 levels deep").c_str(),
                       pw::InputError);
  // Brackets inside strings do not count; 1000 levels are fine.
  const std::string ok = d.write("ok.json", "[\"[[[[\"," + std::string(999, '[') + std::string(999, ']') + "]");
  CHECK(pw::load_json_file(ok).size() == 2);
}
