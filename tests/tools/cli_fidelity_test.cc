// CLI of the fidelity mechanisms (issue 12): profile --measure at several points, run --compare
// --run-trace / --svg, simulate --replay, and their rejections; a long run's run trace keeps
// the last --trace-keep iterations (issue 14, item 7). No timing is checked.
#include <doctest/doctest.h>

#include <set>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

namespace pw::test {
namespace {

TEST_CASE("profile --measure: points at several sizes and thread counts, in context, lists need --measure") {
  CliResult r = run_cli({"profile", "--model", "mlp", "--measure", "--micro-batch", "2,4", "--threads", "1",
                         "--reps", "1", "--warmup", "0", "--json"});
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["micro_batch"] == 2);
  CHECK(j["measurement"]["context"] == "in-context");
  REQUIRE(j["points"].size() == 1);
  CHECK(j["points"][0]["micro_batch"] == 4);
  CliResult iso = run_cli({"profile", "--model", "mlp", "--measure", "--isolated", "--micro-batch", "2",
                           "--threads", "1", "--reps", "1", "--warmup", "0", "--json"});
  REQUIRE(iso.rc == 0);
  CHECK(Json::parse(iso.out)["measurement"]["context"] == "isolated");
  expect_rejected(run_cli({"profile", "--model", "mlp", "--device", "a100-80g", "--micro-batch", "2,4"}), 2,
                  {"--micro-batch: several sizes need --measure"});
  expect_rejected(run_cli({"profile", "--model", "mlp", "--measure", "--micro-batch", "2,x"}), 2,
                  {"--micro-batch: expected a positive integer or a comma-separated list"});
}

TEST_CASE("run --compare --run-trace and --svg, simulate --replay splits the error") {
  ScratchDir dir;
  const std::string t = dir.file("run.trace.json"), svg = dir.file("cmp.svg");
  CliResult r = run_cli({"run", "--model", "mlp", "--depth", "2", "--width", "32", "--stages", "2", "--micro-batches",
                         "2", "--steps", "2", "--warmup-steps", "1", "--compare", "--run-trace", t, "--svg", svg});
  REQUIRE(r.rc == 0);
  const std::string pic = slurp(svg);
  CHECK(pic.find("worker 1 measured") != std::string::npos);
  CHECK(pic.find("worker 0 predicted") != std::string::npos);
  // Two workers: the prediction charged the runtime's measured hand-off to every transfer, and
  // the run trace carries it for the replay.
  const Json trace = Json::parse(slurp(t));
  REQUIRE(trace.contains("handoff_ns"));
  CHECK(trace["handoff_ns"].get<int64_t>() > 0);
  CliResult rep = run_cli({"simulate", "--replay", t, "--json"});
  REQUIRE(rep.rc == 0);
  const Json j = Json::parse(rep.out);
  CHECK(j["first_iteration"] == 1);
  CHECK(j["iterations"] == 2);
  CHECK(j["measured_ns"].get<double>() > 0);
  CHECK(j["replayed_ns"].get<double>() > 0);
  CHECK(j["ops"].size() > 0);
  // The transfers are replayed from the run's own: stage 0 sends 2 forwards, stage 1 two
  // backwards per iteration, each measured (a latency > 0: a hand-off takes time).
  int send_rows = 0;
  for (const Json& op : j["ops"])
    if (op["op"] == "send") {
      ++send_rows;
      CHECK(op["count"] == 2);
      CHECK(op["measured_ns"].get<double>() > 0);
    }
  CHECK(send_rows == 2);
  expect_rejected(run_cli({"simulate", "--replay", t, "--stages", "2"}), 2, {"--stages: not used with --replay"});
  expect_rejected(run_cli({"simulate", "--replay", dir.file("missing.json")}), 2, {"missing.json"});
}


// The iterations whose ops a run trace holds, and the iterations it summarizes.
std::pair<std::set<int>, std::vector<int>> run_trace_iterations(const Json& j) {
  std::set<int> ops;
  for (const Json& e : j.at("trace").at("events")) ops.insert(e.at("iteration").get<int>());
  std::vector<int> summaries;
  for (const Json& s : j.at("iterations")) summaries.push_back(s.at("iteration").get<int>());
  return {ops, summaries};
}

TEST_CASE("run --run-trace of a long run keeps the last --trace-keep iterations and replays them, --trace-all all") {
  ScratchDir dir;
  const std::string t = dir.file("run.trace.json"), all = dir.file("all.trace.json");
  auto run = [&](const std::string& file, std::vector<std::string> more) {
    std::vector<std::string> args{"run", "--model", "mlp", "--depth", "2", "--width", "32", "--stages", "2",
                                  "--micro-batches", "2", "--steps", "12", "--warmup-steps", "2", "--compare",
                                  "--run-trace", file};
    args.insert(args.end(), more.begin(), more.end());
    return run_cli(args);
  };
  REQUIRE(run(t, {"--trace-keep", "3"}).rc == 0);
  const Json j = Json::parse(slurp(t));
  auto [ops, summaries] = run_trace_iterations(j);
  CHECK(ops == std::set<int>{11, 12, 13});  // 2 warm-up + 12 steps: iterations 0..13
  std::vector<int> every(14);
  for (int k = 0; k < 14; ++k) every[k] = k;
  CHECK(summaries == every);
  for (const Json& s : j.at("iterations")) CHECK(s.at("end_ns").get<int64_t>() >= s.at("start_ns").get<int64_t>());
  CliResult rep = run_cli({"simulate", "--replay", t, "--json"});
  REQUIRE(rep.rc == 0);
  CHECK(Json::parse(rep.out)["first_iteration"] == 11);
  CHECK(Json::parse(rep.out)["iterations"] == 3);

  REQUIRE(run(all, {"--trace-all"}).rc == 0);
  const Json full = Json::parse(slurp(all));
  std::tie(ops, summaries) = run_trace_iterations(full);
  CHECK(ops.size() == 14);
  CHECK(summaries == every);
  // Bounded: the same ops per iteration, 3 iterations of them instead of 14.
  CHECK(j.at("trace").at("events").size() * 14 == full.at("trace").at("events").size() * 3);
  rep = run_cli({"simulate", "--replay", all, "--json"});
  REQUIRE(rep.rc == 0);
  CHECK(Json::parse(rep.out)["first_iteration"] == 2);
  CHECK(Json::parse(rep.out)["iterations"] == 12);
}

}  // namespace
}  // namespace pw::test
