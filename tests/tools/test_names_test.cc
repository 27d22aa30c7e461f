// ctest registers each doctest case by name (doctest_discover_tests) and splits names on ';':
// a case whose name holds one would run zero cases under ctest and still pass. No name may.
// CMake's lists do not split inside square brackets: a name with an unclosed '[' swallows the
// names after it into one broken add_test, and the suite's ctest then fails to load.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

// Every ']' closes an open '[', and none is left open.
bool brackets_balanced(const std::string& s) {
  int open = 0;
  for (char c : s) {
    open += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (open < 0) return false;
  }
  return open == 0;
}

}  // namespace

TEST_CASE("test case names hold no semicolon and no unclosed bracket (ctest would run none of such a case)") {
  CHECK(brackets_balanced("in [0, 1], as [3, 32, 32]"));
  CHECK_FALSE(brackets_balanced("in +-[2^-7, 1)"));
  CHECK_FALSE(brackets_balanced("a ] b ["));
  const std::regex name(R"re(TEST_CASE\("([^"]*)"\))re");
  int cases = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(PW_REPO_DIR) + "/tests")) {
    if (e.path().extension() != ".cc" && e.path().extension() != ".h") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
      ++cases;
      CAPTURE(e.path().string());
      CHECK((*it)[1].str().find(';') == std::string::npos);
      CHECK(brackets_balanced((*it)[1].str()));
    }
  }
  CHECK(cases > 300);
}
