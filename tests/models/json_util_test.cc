#include "models/json_util.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "models/error.h"

using pw::InputError;
using pw::Json;

TEST_CASE("checked getters name the JSON path and the expectation") {
  Json j = {{"a", 3}, {"s", "x"}, {"f", 1.5}, {"neg", -2}, {"b", true}};
  CHECK(pw::get_int(j, "a", "/root") == 3);
  CHECK(pw::get_string(j, "s", "") == "x");
  CHECK(pw::get_number(j, "f", "") == 1.5);
  CHECK_THROWS_WITH_AS(pw::get_int(j, "missing", "/root"), "/root/missing: missing required field", InputError);
  CHECK_THROWS_WITH_AS(pw::get_int(j, "s", "/root"), "/root/s: expected an integer, got string", InputError);
  CHECK_THROWS_WITH_AS(pw::get_int(j, "f", ""), "/f: expected an integer, got 1.5", InputError);
  CHECK_THROWS_AS(pw::get_int(j, "neg", ""), InputError);
  CHECK_THROWS_AS(pw::get_number(j, "neg", ""), InputError);
  CHECK_THROWS_AS(pw::get_bool(j, "a", ""), InputError);
  CHECK(pw::get_int_or(j, "zz", "", 7) == 7);
  Json nan = {{"x", std::numeric_limits<double>::quiet_NaN()}};
  CHECK_THROWS_WITH_AS(pw::get_number(nan, "x", ""), doctest::Contains("finite"), InputError);
}

TEST_CASE("format tags are checked") {
  Json j = {{"format", "pipewright.model/1"}};
  CHECK_NOTHROW(pw::check_format(j, "model", 1, ""));
  CHECK_THROWS_WITH_AS(pw::check_format(j, "plan", 1, ""), doctest::Contains("expected \"pipewright.plan/1\""),
                       InputError);
}

TEST_CASE("truncated JSON names the file and says truncated") {
  auto dir = std::filesystem::temp_directory_path() / "pw_json_util_test";
  std::filesystem::create_directories(dir);
  auto file = (dir / "t.json").string();
  { std::ofstream(file) << "{\"format\": \"pipewright.model/1\", \"layers\": ["; }
  CHECK_THROWS_WITH_AS(pw::load_json_file(file), doctest::Contains("t.json: invalid JSON"), InputError);
  CHECK_THROWS_WITH_AS(pw::load_json_file(file), doctest::Contains("truncated"), InputError);
  CHECK_THROWS_WITH_AS(pw::load_json_file((dir / "absent.json").string()), doctest::Contains("cannot open"),
                       InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("atomic write leaves only the final file") {
  auto dir = std::filesystem::temp_directory_path() / "pw_atomic_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto file = (dir / "out.json").string();
  pw::save_json_file(file, Json{{"k", 1}});
  CHECK(pw::load_json_file(file)["k"] == 1);
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  CHECK(entries == 1);
  CHECK_THROWS_AS(pw::write_file_atomic((dir / "no/such/dir/x.json").string(), "x"), InputError);
  std::filesystem::remove_all(dir);
}
