// Issue 39 through the command line: GPT 48 x 1600 on 8 a100-80g, every cost flag at its
// default, gets one iteration time from `plan`, `simulate --plan`, `whatif throughput` and
// `whatif best` restricted to the plan's layout, its cut included (--stage-layers: Megatron's
// equal cut, the default, is 14% slower here; tests/whatif/one_answer_test.cc holds the grid).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

TEST_CASE(
    "one answer: plan, simulate --plan, whatif throughput and whatif best of GPT 48x1600 on 8 a100-80g agree within "
    "1%") {
  ScratchDir dir;
  const std::vector<std::string> gpt = {"--layers", "48",   "--d-model", "1600",  "--heads", "25",
                                        "--seq",    "1024", "--vocab",   "50257", "--batch", "64"};
  std::vector<std::string> plan_args = {
      "plan", "--model",    "gpt",  "--device", "a100-80g",        "--devices", "8", "--micro-batches",
      "16",   "--schedule", "1f1b", "-o",       dir.file("p.json")};
  plan_args.insert(plan_args.end(), gpt.begin(), gpt.end());
  const CliResult p = run_cli(plan_args);
  CAPTURE(p.err);
  REQUIRE(p.rc == 0);
  const Json plan = Json::parse(pw::test::slurp(dir.file("p.json")));
  const double planned = plan.at("predicted").at("iteration_time_s").get<double>();
  const int stages = static_cast<int>(plan.at("stages").size());
  int recomputed = 0;
  std::string cut;  // the plan's transformer blocks per stage, for whatif best's --stage-layers
  for (const Json& s : plan.at("stages")) {
    recomputed += s.at("recompute").get<bool>() ? 1 : 0;
    int blocks = 0;
    for (const Json& name : s.at("layers")) blocks += name.get<std::string>().rfind("block", 0) == 0 ? 1 : 0;
    cut += (cut.empty() ? "" : ",") + std::to_string(blocks);
  }

  const CliResult s = run_cli({"simulate", "--plan", dir.file("p.json"), "--json"});
  CAPTURE(s.err);
  REQUIRE(s.rc == 0);
  const double simulated = Json::parse(s.out).at("iteration_ms").get<double>() * 1e-3;

  std::vector<std::string> tp_args = {"whatif", "throughput", "--device",    "a100-80g", "-K",     "8",
                                      "-M",     "16",         "--schedules", "1f1b",     "--json", "--no-progress"};
  tp_args.insert(tp_args.end(), gpt.begin(), gpt.end());
  const CliResult t = run_cli(tp_args);
  CAPTURE(t.err);
  REQUIRE(t.rc == 0);
  const Json rows = Json::parse(t.out).at("rows");
  REQUIRE(rows.size() == 1);
  const double cell = rows[0].at("iteration_s").get<double>();

  // whatif best models one recompute setting for all stages; the default plan recomputes none.
  REQUIRE((recomputed == 0 || recomputed == stages));
  std::vector<std::string> best_args = {"whatif",         "best",
                                        "--device",       "a100-80g",
                                        "--devices",      std::to_string(stages),
                                        "--tp",           "1",
                                        "--pp",           std::to_string(stages),
                                        "--dp",           "1",
                                        "--micro-batch",  "4",
                                        "--chunks",       "1",
                                        "--stage-layers", cut,
                                        "--recompute",    recomputed ? "on" : "off",
                                        "--json",         "--no-progress"};
  for (size_t k = 0; k < gpt.size(); k += 2)  // the same model flags (whatif best has no --ffn, same default)
    best_args.insert(best_args.end(), {gpt[k], gpt[k + 1]});
  const CliResult b = run_cli(best_args);
  CAPTURE(b.err);
  REQUIRE(b.rc == 0);
  const double best = Json::parse(b.out).at("best").at("iteration_s").get<double>();

  MESSAGE("plan ", planned, " s, simulate ", simulated, " s, throughput ", cell, " s, best ", best, " s (", stages,
          " stages)");
  CHECK(std::abs(simulated / planned - 1) <= 0.01);
  CHECK(std::abs(cell / planned - 1) <= 0.01);
  CHECK(std::abs(best / planned - 1) <= 0.01);
}
