// ctest registers each doctest case by name (doctest_discover_tests) and splits names on ';':
// a case whose name holds one would run zero cases under ctest and still pass. No name may.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

TEST_CASE("test case names hold no semicolon (ctest would run none of such a case)") {
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
    }
  }
  CHECK(cases > 300);
}
