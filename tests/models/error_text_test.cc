// models/error_text.h: control characters escaped, long values cut, deep values described
// without recursion.
#include <doctest/doctest.h>

#include <string>

#include "models/error_text.h"
#include "models/json_util.h"

TEST_CASE("escape_for_message: control characters are escaped, long text is cut with an ellipsis") {
  CHECK(pw::escape_for_message("a\nb\tc\rd\x01"
                               "e\x7f") == "a\\nb\\tc\\rd\\x01e\\x7f");
  CHECK(pw::escape_for_message(std::string(100, 'x'), 10) == std::string(10, 'x') + "\xE2\x80\xA6");
  CHECK(pw::escape_for_message("short", 10) == "short");
  // A cut never splits a UTF-8 sequence: "é" is 2 bytes.
  CHECK(pw::escape_for_message("aaaaaaaaa\xC3\xA9zz", 10) == "aaaaaaaaa\xE2\x80\xA6");
  CHECK(pw::one_line_message("line 1\nline 2") == "line 1\\nline 2");
}

TEST_CASE("describe_json_value: scalars in full, containers one level deep, cut") {
  CHECK(pw::describe_json_value(pw::Json(3)) == "3");
  CHECK(pw::describe_json_value(pw::Json("a\nb")) == "\"a\\nb\"");
  CHECK(pw::describe_json_value(pw::Json::parse(R"([1, [2, [3]], {"a": 1}, {}])")) == "[1,[...],{...},{}]");
  CHECK(pw::describe_json_value(pw::Json::parse(R"({"k": [1], "j": 2})")) == "{\"j\":2,\"k\":[...]}");
  CHECK(pw::describe_json_value(pw::Json(std::string(500, 'y'))).size() == 80 + 3);
  // 900 levels deep: described in constant work, no recursion.
  pw::Json deep = pw::Json::array();
  for (int i = 0; i < 900; ++i) deep = pw::Json::array({deep});
  CHECK(pw::describe_json_value(deep) == "[[...]]");
}
