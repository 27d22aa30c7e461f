// The limits table (models/limits.h): integers read from JSON are range-checked before they
// are narrowed or used, never truncated or wrapped.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "models/error.h"
#include "models/limits.h"

namespace pw::models {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) { return e.what(); }
  return "";
}

TEST_CASE("get_limited reads integers within the limit and refuses the rest with the range") {
  const Json j = Json::parse(R"({"a": 3, "b": 65537, "c": 4294967298, "d": 18446744073709551615,
                                 "e": 1e3, "f": 1.5, "g": -1, "h": "2", "i": 9223372036854775807})");
  CHECK(get_limited(j, "a", "", limits::kStages) == 3);
  CHECK(get_limited(j, "e", "", limits::kStages) == 1000);
  CHECK(get_limited_int(j, "a", "/x", limits::kStages) == 3);
  CHECK(get_limited_or(j, "missing", "", 7, limits::kStages) == 7);
  CHECK(message_of([&] { get_limited(j, "b", "", limits::kStages); }) ==
        "/b: expected an integer in [1, 65536], got 65537");
  CHECK(message_of([&] { get_limited_int(j, "c", "/r", limits::kStages); }) ==
        "/r/c: expected an integer in [1, 65536], got 4294967298");
  CHECK(message_of([&] { get_limited(j, "d", "", limits::kBytes); }) ==
        "/d: expected an integer in [0, 1000000000000000000], got 18446744073709551615");
  CHECK(message_of([&] { get_limited(j, "i", "", limits::kDurationNs); }) ==
        "/i: expected an integer in [0, 1000000000000000], got 9223372036854775807");
  CHECK(message_of([&] { get_limited(j, "f", "", limits::kStages); }).find("/f: expected an integer, got 1.5") == 0);
  CHECK(message_of([&] { get_limited(j, "g", "", limits::kStages); }) ==
        "/g: expected an integer in [1, 65536], got -1");
  CHECK(message_of([&] { get_limited(j, "h", "", limits::kStages); }) == "/h: expected an integer, got string");
  CHECK(message_of([&] { get_limited(j, "missing", "", limits::kStages); }) == "/missing: missing required field");
  CHECK(message_of([&] { limited_value(Json(5), "/v/0", {0, 4}); }) == "/v/0: expected an integer in [0, 4], got 5");
}

TEST_CASE("check_schedule_size bounds stages x micro-batches before a schedule is built") {
  CHECK_NOTHROW(check_schedule_size(64, 1024, "s"));
  CHECK_NOTHROW(check_schedule_size(1, limits::kMicroBatches.max, "s"));
  CHECK(message_of([&] { check_schedule_size(65536, 1048576, "s"); }) ==
        "s: 65536 stages x 1048576 micro-batches: more than 33554432 ops in one schedule");
  CHECK(range_text(limits::kChunks) == "[1, 1024]");
  CHECK_THROWS_AS(check_limit(0, limits::kChunks, "--chunks"), InputError);
}

TEST_CASE("real limits: the shortest text that reads back, and the flags' wording") {
  CHECK(format_real(65536) == "65536");
  CHECK(format_real(0.5) == "0.5");
  CHECK(format_real(1e-9) == "1e-09");
  CHECK(format_real(1e18) == "1e+18");
  CHECK(format_real(4611686018427387904.0) == "4.6116860184273879e+18");
  CHECK(format_real(0.1 + 0.2) == "0.30000000000000004");
  CHECK(range_text(limits::kEfficiency) == "[0, 1]");
  CHECK(check_real_limit(0.5, limits::kShare, "/s") == 0.5);
  CHECK(message_of([] { check_real_limit(1.5, limits::kShare, "/s"); }) == "/s: expected a value in [0, 1], got 1.5");
  CHECK(message_of([] { check_real_limit(-1, limits::kBandwidth, "/b"); }) ==
        "/b: expected a value in [1, 1e+18], got -1");
  const Json j = Json::parse(R"({"e": 0.25, "f": 2, "g": "x"})");
  CHECK(get_real_limited_or(j, "e", "/o", 1, limits::kEfficiency) == 0.25);
  CHECK(get_real_limited_or(j, "missing", "/o", 1, limits::kEfficiency) == 1);
  CHECK(message_of([&] { get_real_limited_or(j, "f", "/o", 1, limits::kEfficiency); }) ==
        "/o/f: expected a value in [0, 1], got 2");
  CHECK(message_of([&] { get_real_limited_or(j, "g", "/o", 1, limits::kEfficiency); }) ==
        "/o/g: expected a number, got string");
}

}  // namespace
}  // namespace pw::models
