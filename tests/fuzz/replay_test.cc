// Every committed fuzz input, replayed through its reader: accepted or rejected with
// pw::InputError, never another exception (a crash or sanitizer report fails the whole run).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fuzz/readers.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Replays every file under `dir` (if it exists) through `reader`; returns how many.
int replay(std::string_view reader, const fs::path& dir, int& accepted) {
  int n = 0;
  if (!fs::is_directory(dir)) return 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    CAPTURE(e.path().string());
    bool ok = false;
    CHECK_NOTHROW(ok = pw::fuzz::read_as(reader, slurp(e.path())));
    accepted += ok;
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("fuzz corpora: every seed input of every reader is read without a crash") {
  for (std::string_view reader : pw::fuzz::reader_names()) {
    CAPTURE(reader);
    int accepted = 0;
    const int n = replay(reader, fs::path(PW_FUZZ_CORPUS_DIR) / std::string(reader), accepted);
    CHECK(n > 0);         // each reader has a committed corpus
    CHECK(accepted > 0);  // ... holding at least one valid input (the tool's own outputs)
  }
}

TEST_CASE("fuzz regressions: inputs that once crashed or hung a reader are rejected cleanly") {
  int total = 0;
  for (std::string_view reader : pw::fuzz::reader_names()) {
    CAPTURE(reader);
    int accepted = 0;
    total += replay(reader, fs::path(PW_FUZZ_CORPUS_DIR) / "regressions" / std::string(reader), accepted);
  }
  CHECK(total > 0);
}

TEST_CASE("fuzz readers: nesting deeper than the JSON depth limit is rejected, not recursed into") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (std::string_view reader : pw::fuzz::reader_names()) {
    CAPTURE(reader);
    CHECK_FALSE(pw::fuzz::read_as(reader, deep));
  }
  const std::string sweep = R"({"format": "pipewright.sweep/1", "axes": {"batch": [)" + deep + "]}}";
  CHECK_FALSE(pw::fuzz::read_as("sweep", sweep));
}
