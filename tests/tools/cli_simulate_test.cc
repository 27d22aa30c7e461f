// CLI tests of `pipewright simulate`: uniform and plan modes, output files, bad input.
#include <doctest/doctest.h>

#include "models/json_util.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

void expect_bad_sim(const CliResult& r, const std::string& needle, const ScratchDir& dir,
                    const std::vector<std::string>& keep) {
  pw::test::expect_rejected(r, 2, {needle}, &dir, keep);
}

std::vector<std::string> uniform(std::vector<std::string> extra) {
  std::vector<std::string> a = {"simulate", "--uniform", "--stages", "4",   "--micro-batches", "8",
                                "--t-f",    "1",         "--t-b",    "1.5", "--t-w",           "0.5"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST_CASE("simulate --uniform: JSON report with the closed form, trace and SVG files") {
  ScratchDir dir;
  const CliResult r =
      run_cli(uniform({"--schedule", "1f1b", "--json", "--trace", dir.file("t.json"), "--svg", dir.file("t.svg")}));
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["makespan_ms"].get<double>() == doctest::Approx(33.0));
  CHECK(j["cost_ms"].get<double>() == doctest::Approx(33.0));
  CHECK(j["bubble_rate"].get<double>() == doctest::Approx(3.0 / 11.0));
  CHECK(j["stages"].size() == 4);
  CHECK(j["stages"][0]["busy_ms"].get<double>() == doctest::Approx(24.0));
  CHECK(j["throughput_samples_per_s"].get<double>() == doctest::Approx(8 / 0.033));
  CHECK(j.contains("peak_memory_bytes"));
  const Json t = Json::parse(pw::test::slurp(dir.file("t.json")));
  CHECK(t["traceEvents"].size() > 64);
  CHECK(pw::test::slurp(dir.file("t.svg")).rfind("<svg", 0) == 0);
  const CliResult table = run_cli(uniform({"--schedule", "zb-h1", "--t-comm", "0.1"}));
  CHECK(table.rc == 0);
  CHECK(table.out.find("bubble") != std::string::npos);
  CHECK(table.out.find("busy_ms") != std::string::npos);
}

TEST_CASE("simulate: bad input exits 2 with one line and leaves no file") {
  ScratchDir dir;
  const std::string svg = dir.file("x.svg");
  expect_bad_sim(run_cli(uniform({"--schedule", "zigzag", "--svg", svg})), "unknown schedule \"zigzag\"", dir, {});
  expect_bad_sim(run_cli({"simulate", "--uniform", "--stages", "4", "--micro-batches", "6", "--t-f", "1", "--t-b", "1",
                          "--schedule", "interleaved-1f1b", "--chunks", "2", "--svg", svg}),
                 "multiple of the number of stages", dir, {});
  expect_bad_sim(run_cli(uniform({"--t-comm", "-2", "--svg", svg})), "--t-comm", dir, {});
  expect_bad_sim(
      run_cli({"simulate", "--uniform", "--stages", "4", "--micro-batches", "8", "--t-f", "-1", "--t-b", "1"}), "--t-f",
      dir, {});
  expect_bad_sim(
      run_cli({"simulate", "--uniform", "--stages", "0", "--micro-batches", "8", "--t-f", "1", "--t-b", "1"}),
      "--stages", dir, {});
  expect_bad_sim(run_cli({"simulate"}), "--plan", dir, {});
  expect_bad_sim(run_cli({"simulate", "--plan", dir.file("none.json")}), "none.json", dir, {});
}

TEST_CASE("simulate --plan with a profile, a plan naming layers the profile lacks is exit 2") {
  ScratchDir dir;
  pw::models::Profile prof;
  prof.model = "tiny";
  prof.source = "analytic";
  prof.micro_batch = 1;
  for (const char* name : {"a", "b", "c"}) {
    pw::models::LayerProfile l;
    l.name = name;
    l.kind = "linear";
    l.forward_ns = 1000000;
    l.backward_input_ns = 1000000;
    l.backward_weight_ns = 1000000;
    l.output_bytes = 1000;
    l.stash_bytes = 1000;
    l.parameter_bytes = 4000;
    prof.layers.push_back(l);
  }
  prof.edges = {{0, 1}, {1, 2}};
  pw::planner::Plan plan;
  plan.model = "tiny";
  plan.schedule = pw::planner::ScheduleKind::one_f_one_b;
  plan.batch = 4;
  plan.micro_batch_size = 1;
  plan.num_micro_batches = 4;
  plan.num_devices_used = 2;
  pw::planner::StagePlan s0, s1;
  s0.first_layer = 0;
  s0.end_layer = 1;
  s0.layer_names = {"a"};
  s0.devices = {0};
  s1.first_layer = 1;
  s1.end_layer = 3;
  s1.layer_names = {"b", "c"};
  s1.devices = {1};
  plan.stages = {s0, s1};
  Json pj, fj;
  to_json(pj, plan);
  to_json(fj, prof);
  const std::string plan_file = dir.write("plan.json", pj.dump()), prof_file = dir.write("profile.json", fj.dump());
  const CliResult r = run_cli({"simulate", "--plan", plan_file, "--profile", prof_file, "--json"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  // Stage 1 (F 2 ms + BW 4 ms) is the bottleneck: F(0,0) 1 ms, 4 x 6 ms on stage 1, BW(0,3) 2 ms.
  CHECK(j["makespan_ms"].get<double>() == doctest::Approx(27.0));
  s1.layer_names = {"b", "softmax"};
  plan.stages = {s0, s1};
  to_json(pj, plan);
  dir.write("plan.json", pj.dump());
  expect_bad_sim(run_cli({"simulate", "--plan", plan_file, "--profile", prof_file, "--svg", dir.file("o.svg")}),
                 "softmax", dir, {"plan.json", "profile.json"});
}

TEST_CASE("simulate --plan: an unreplicated PipeDream plan (m = 1) pipelines across iterations") {
  // vgg16 --straight on 4 machines at 1.25 GB/s: one micro-batch per plan iteration. Simulated
  // one iteration at a time it never overlapped (85.6 samples/s against the planned 335.9); the
  // 1F1B warm-up now fits in one simulated iteration. The rest of the gap (304 vs 336 when this
  // was written) is PipeDream's overlap of transfers with compute.
  ScratchDir dir;
  const std::string graph = std::string(PW_PIPEDREAM_DIR) + "/vgg16/graph.txt";
  CliResult p = run_cli({"plan", "--profile", graph, "--objective", "pipedream", "--levels", "4", "--bandwidths",
                         "1.25e9", "--activation-comm", "--straight", "-o", dir.file("plan.json")});
  REQUIRE(p.rc == 0);
  const double planned = pw::planner::load_plan_file(dir.file("plan.json")).predicted.throughput_samples_per_s;
  CliResult s = run_cli({"simulate", "--plan", dir.file("plan.json"), "--json"});
  CAPTURE(s.err);
  REQUIRE(s.rc == 0);
  const Json r = Json::parse(s.out);
  CHECK(r.at("plan_iterations_per_iteration") == 4);
  CHECK(r.at("throughput_samples_per_s").get<double>() > 0.85 * planned);
  CHECK(r.at("throughput_samples_per_s").get<double>() < 1.02 * planned);
}
