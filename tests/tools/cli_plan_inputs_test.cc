// Plans carry their inputs (planner::Plan::inputs): `simulate --plan P` and `run --plan P` reproduce
// a plan alone, a replaced profile or cluster is named, an edited embedded profile is refused.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include "models/json_util.h"
#include "planner/plan.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

const std::vector<std::string> kGpt48 = {"--model",   "gpt",     "--layers", "48",       "--d-model",
                                         "2048",      "--heads", "32",       "--device", "a100-80g",
                                         "--devices", "8",       "--batch",  "256"};

pw::planner::Plan make_plan(const ScratchDir& dir, const std::string& name, std::vector<std::string> extra) {
  std::vector<std::string> args = {"plan"};
  args.insert(args.end(), kGpt48.begin(), kGpt48.end());
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"-o", dir.file(name)});
  CliResult r = run_cli(args);
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  return pw::planner::load_plan_file(dir.file(name));
}

Json simulate_alone(const ScratchDir& dir, const std::string& name) {
  CliResult r = run_cli({"simulate", "--plan", dir.file(name), "--json"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());  // no note: the plan's own inputs were used
  return Json::parse(r.out);
}

}  // namespace

TEST_CASE("simulate --plan alone reproduces a sync plan from the inputs it carries") {
  ScratchDir dir;
  const pw::planner::Plan gpipe = make_plan(dir, "gpipe.json", {"--schedule", "gpipe"});
  REQUIRE(!gpipe.inputs.profile.is_null());
  REQUIRE(!gpipe.inputs.cluster.is_null());
  REQUIRE(!gpipe.inputs.model.is_null());
  CHECK(gpipe.inputs.options.at("dtype") == "bf16");
  CHECK(gpipe.inputs.options.at("optimizer") == "adam-mixed");
  const Json g = simulate_alone(dir, "gpipe.json");
  // GPipe's fill-drain closed form is the simulator's iteration to the nanosecond.
  CHECK(g.at("makespan_ns").get<int64_t>() == std::llround(gpipe.predicted.iteration_time_s * 1e9));
  CHECK(g.at("peak_memory_bytes").get<int64_t>() == gpipe.predicted.peak_memory_bytes);

  // 1F1B with unequal stages and NVLink transfers: the DP's closed form is 0.16% short of the
  // simulation here; `plan` reports the simulation of the plan it picked (tools/cmd_plan.cc), so
  // the plan and simulate agree exactly for every sync schedule.
  const pw::planner::Plan ofob = make_plan(dir, "1f1b.json", {"--schedule", "1f1b"});
  const Json o = simulate_alone(dir, "1f1b.json");
  CHECK(o.at("makespan_ns").get<int64_t>() == std::llround(ofob.predicted.iteration_time_s * 1e9));
  CHECK(o.at("peak_memory_bytes").get<int64_t>() == ofob.predicted.peak_memory_bytes);
  CHECK(o.at("schedule_bubble").get<double>() == ofob.predicted.schedule_bubble);
  // The table says the same as the file.
  std::vector<std::string> table = {"plan", "--schedule", "1f1b"};
  table.insert(table.end(), kGpt48.begin(), kGpt48.end());
  char iteration[64];
  std::snprintf(iteration, sizeof iteration, "iteration %.9f s", ofob.predicted.iteration_time_s);
  CHECK(run_cli(table).out.find(iteration) != std::string::npos);
  const pw::planner::Plan zb = make_plan(dir, "zb.json", {"--schedule", "zb-h1", "--micro-batches", "16"});
  const Json z = simulate_alone(dir, "zb.json");
  CHECK(z.at("makespan_ns").get<int64_t>() == std::llround(zb.predicted.iteration_time_s * 1e9));
  CHECK(z.at("peak_memory_bytes").get<int64_t>() == zb.predicted.peak_memory_bytes);

  // The same plan with another cluster: simulated on it, and said so.
  CliResult c = run_cli(
      {"cluster", "--device", "a100-80g", "--devices", "8", "--intra-node", "pcie4", "-o", dir.file("pcie.json")});
  REQUIRE(c.rc == 0);
  CliResult other =
      run_cli({"simulate", "--plan", dir.file("gpipe.json"), "--cluster", dir.file("pcie.json"), "--json"});
  REQUIRE(other.rc == 0);
  CHECK(other.err.find("is not the cluster " + dir.file("gpipe.json") + " was made for (8xa100-80g)") !=
        std::string::npos);
  CHECK(Json::parse(other.out).at("makespan_ns").get<int64_t>() > g.at("makespan_ns").get<int64_t>());
}

TEST_CASE("plan inputs: an edited embedded profile is refused, a plan without inputs says what it simulates") {
  ScratchDir dir;
  make_plan(dir, "p.json", {"--schedule", "gpipe"});
  Json j = pw::load_json_file(dir.file("p.json"));
  j["inputs"]["profile"]["layers"][1]["forward_ns"] = 1;
  std::ofstream(dir.file("edited.json")) << j.dump();
  pw::test::expect_rejected(run_cli({"simulate", "--plan", dir.file("edited.json")}), 2,
                            {"edited.json", "/inputs/profile: its content hash", "edited after planning?"});
  j = pw::load_json_file(dir.file("p.json"));
  j.erase("inputs");
  std::ofstream(dir.file("bare.json")) << j.dump();
  CliResult bare = run_cli({"simulate", "--plan", dir.file("bare.json")});
  CHECK(bare.rc == 0);
  CHECK(bare.err.find("carries no profile and none was given (--profile)") != std::string::npos);
}

#ifdef PW_HAVE_EXEC
TEST_CASE("run --plan alone runs the plan's own model, not a zoo default of the same family") {
  ScratchDir dir;
  CliResult p =
      run_cli({"plan",    "--model",  "gpt",           "--layers",  "3",       "--d-model", "48",
               "--heads", "4",        "--seq",         "16",        "--vocab", "64",        "--batch",
               "8",       "--device", "cpu-core-avx2", "--devices", "2",       "-o",        dir.file("cpu.json")});
  REQUIRE(p.rc == 0);
  CliResult r = run_cli({"run", "--plan", dir.file("cpu.json"), "--steps", "2", "--threads", "1", "--json"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  CHECK(j.at("model") == pw::planner::load_plan_file(dir.file("cpu.json")).model);
  CHECK(j.at("batch") == 8);
  CHECK(j.at("losses").size() == 2);
  pw::test::expect_rejected(run_cli({"run", "--plan", dir.file("cpu.json"), "--steps", "2", "--layers", "4"}), 2,
                            {"--layers: ", "carries its model"});
}
#endif
