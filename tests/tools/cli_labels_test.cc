// Figures are printed under the names of what they are: the whatif throughput table's idle
// column is the idle share (not the longest-span device's idle, once printed as "bubble": 0.84
// for a schedule whose own bubble was 2.7%), and simulate's "cost" line says it is the longest
// span and whose it is.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;

TEST_CASE("whatif throughput: the table's idle column is the simulated idle share") {
  const std::vector<std::string> cell = {"whatif",    "throughput", "--family", "gpt",      "--layers",     "8",
                                         "--d-model", "256",        "--heads",  "4",        "--seq",        "128",
                                         "--vocab",   "1000",       "--batch",  "16",       "-K",           "4",
                                         "-M",        "16",         "--device", "a100-80g", "--no-progress"};
  std::vector<std::string> json = cell;
  json.push_back("--json");
  const CliResult j = run_cli(json);
  REQUIRE(j.rc == 0);
  const Json row = Json::parse(j.out).at("rows").at(0);
  REQUIRE(row.at("feasible") == true);
  const double idle = row.at("idle_share").get<double>(), longest = row.at("bubble_rate").get<double>();
  CHECK(idle > 0);
  const CliResult t = run_cli(cell);
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("idle share") != std::string::npos);
  CHECK(t.out.find("bubble") == std::string::npos);
  char shown[32], other[32];
  // The table rounds to 3 decimals and drops trailing zeros (0.220 is shown as 0.22).
  std::snprintf(shown, sizeof shown, " %g ", std::round(idle * 1000) / 1000);
  std::snprintf(other, sizeof other, " %g ", std::round(longest * 1000) / 1000);
  CAPTURE(t.out);
  REQUIRE(std::string(shown) != std::string(other));  // here the two figures differ at 3 decimals
  CHECK(t.out.find(shown) != std::string::npos);
  CHECK(t.out.find(other) == std::string::npos);
}

TEST_CASE("simulate: the longest span is named as such, with its device and that device's idle share") {
  const CliResult r = run_cli({"simulate", "--uniform", "--stages", "4", "--micro-batches", "8", "--t-f", "1", "--t-b",
                               "2", "--schedule", "1f1b"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("longest span") != std::string::npos);
  CHECK(r.out.find("(device 0, idle") != std::string::npos);
  CHECK(r.out.find(" cost ") == std::string::npos);
}
