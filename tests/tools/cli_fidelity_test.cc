// CLI of the fidelity mechanisms: profile --measure at several points, run --compare
// --run-trace / --svg, simulate --replay, and their rejections; a long run's run trace keeps
// the last --trace-keep iterations. No timing is checked.
#include <doctest/doctest.h>

#include <set>

#include "models/json_util.h"
#include "planner/near_ties.h"
#include "tests/tools/cli_runner.h"
#include "tools/plan_trials.h"

namespace pw::test {
namespace {

TEST_CASE("profile --measure: points at several sizes and thread counts, in context, lists need --measure") {
  CliResult r = run_cli({"profile", "--model", "mlp", "--measure", "--micro-batch", "2,4", "--threads", "1", "--reps",
                         "1", "--warmup", "0", "--json"});
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["micro_batch"] == 2);
  CHECK(j["measurement"]["context"] == "in-context");
  REQUIRE(j["points"].size() == 1);
  CHECK(j["points"][0]["micro_batch"] == 4);
  CliResult iso = run_cli({"profile", "--model", "mlp", "--measure", "--isolated", "--micro-batch", "2", "--threads",
                           "1", "--reps", "1", "--warmup", "0", "--json"});
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
  CliResult r = run_cli({"run",         "--model",
                         "mlp",         "--depth",
                         "2",           "--width",
                         "32",          "--stages",
                         "2",           "--micro-batches",
                         "2",           "--steps",
                         "2",           "--warmup-steps",
                         "1",           "--compare",
                         "--run-trace", t,
                         "--svg",       svg});
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
    std::vector<std::string> args{"run", "--model",        "mlp", "--depth",         "2",           "--width",
                                  "32",  "--stages",       "2",   "--micro-batches", "2",           "--steps",
                                  "12",  "--warmup-steps", "2",   "--compare",       "--run-trace", file};
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

TEST_CASE("plan --measure: the near ties are run, the fastest median is kept, and the plan runs") {
  ScratchDir dir;
  const std::string plan = dir.file("p.json");
  const std::vector<std::string> base{"plan",    "--model", "mlp",     "--depth", "2",
                                      "--width", "64",      "--batch", "8",       "--measure"};
  std::vector<std::string> args = base;
  // --trial-band 10: every candidate within 1000% of the fastest is a near tie (at most
  // kTrialMaxPlans).
  // --trial-seconds 0: exactly the two rounds asked for.
  for (const char* x : {"--trials", "2", "--trial-band", "10", "--trial-seconds", "0", "-o"}) args.push_back(x);
  args.push_back(plan);
  CliResult r = run_cli(args);
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.find("trials: chose ") != std::string::npos);
  const Json p = load_json_file(plan);
  const Json& trials = p["inputs"]["options"]["trials"];
  REQUIRE(trials.is_array());
  REQUIRE(trials.size() >= 2);
  CHECK(trials.size() <= static_cast<size_t>(tools::kTrialMaxPlans));
  // Every candidate priced is recorded (and printed), fastest first, and the trials are among them.
  const Json& cands = p["inputs"]["options"]["candidates"];
  REQUIRE(cands.is_array());
  REQUIRE(cands.size() >= trials.size());
  size_t printed = 0;
  for (size_t at = r.err.find("candidate: "); at != std::string::npos; at = r.err.find("candidate: ", at + 1))
    ++printed;
  CHECK(printed == cands.size());
  for (size_t i = 1; i < cands.size(); ++i)
    CHECK(cands[i]["predicted_ms"].get<double>() >= cands[i - 1]["predicted_ms"].get<double>());
  for (const Json& c : cands) CHECK(c["micro_batches"].get<int>() * c["micro_batch_size"].get<int>() >= 8);
  for (const Json& t : trials) {
    bool found = false;
    for (const Json& c : cands)
      found = found || (c["threads_per_stage"] == t["threads_per_stage"] && c["micro_batches"] == t["micro_batches"]);
    CHECK(found);
  }
  // Rounds are rotated: round 2 runs round 1's plans starting from its second.
  const auto round_plans = [&r](int round) {  // the configurations of a round's lines, in order
    std::vector<std::string> plans;
    const std::string tag = "  round " + std::to_string(round) + ": ";
    for (size_t at = r.err.find(tag); at != std::string::npos; at = r.err.find(tag, at + 1)) {
      const size_t from = at + tag.size();
      plans.push_back(r.err.substr(from, r.err.find(" predicted", from) - from));
    }
    return plans;
  };
  const std::vector<std::string> round1 = round_plans(1), round2 = round_plans(2);
  REQUIRE(round1.size() >= 2);
  REQUIRE(round2.size() == round1.size());
  for (size_t i = 0; i < round1.size(); ++i) CHECK(round2[i] == round1[(i + 1) % round1.size()]);
  size_t fastest = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    const Json& t = trials[i];
    REQUIRE(t["measured_ms"].size() == 2);  // one run per round
    for (const Json& ms : t["measured_ms"]) CHECK(ms.get<double>() > 0);
    if (t["median_ms"].get<double>() < trials[fastest]["median_ms"].get<double>()) fastest = i;
  }
  // The plan written is the fastest median's (the first of equal medians).
  CHECK(p["threads_per_stage"] == trials[fastest]["threads_per_stage"]);
  CHECK(p["num_micro_batches"] == trials[fastest]["micro_batches"]);
  CHECK(p["stages"].size() == trials[fastest]["stages"].get<size_t>());
  CliResult run = run_cli({"run", "--plan", plan, "--steps", "1"});
  CAPTURE(run.err);
  CHECK(run.rc == 0);

  // With the default --trial-seconds: at least 2 rounds, at most kTrialMaxRounds, every plan in each; a
  // round past the second ran only because the ones before it left a near tie.
  args = base;
  for (const char* x : {"--trials", "2", "--trial-band", "10", "--json"}) args.push_back(x);
  r = run_cli(args);
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json adaptive = Json::parse(r.out)["inputs"]["options"]["trials"];
  REQUIRE(adaptive.size() >= 2);
  const size_t rounds = adaptive[0]["measured_ms"].size();
  CHECK(rounds >= 2);
  CHECK(rounds <= static_cast<size_t>(tools::kTrialMaxRounds));
  std::vector<std::vector<double>> runs;
  for (const Json& t : adaptive) {
    REQUIRE(t["measured_ms"].size() == rounds);
    runs.push_back(t["measured_ms"].get<std::vector<double>>());
  }
  for (size_t k = 2; k < rounds; ++k) {
    std::vector<std::vector<double>> first_k;
    for (const auto& v : runs) first_k.emplace_back(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
    CAPTURE(k);
    CHECK_FALSE(planner::trials_settled(first_k, tools::kTrialSettleMargin));
  }
  CHECK(r.err.find(std::to_string(rounds) + " rounds, ") != std::string::npos);

  // --trials 0: chosen by prediction alone, nothing run, nothing recorded.
  args = base;
  for (const char* x : {"--trials", "0", "--json"}) args.push_back(x);
  r = run_cli(args);
  REQUIRE(r.rc == 0);
  CHECK(r.err.find("trials:") == std::string::npos);
  CHECK_FALSE(Json::parse(r.out)["inputs"]["options"].contains("trials"));

  expect_rejected(run_cli({"plan", "--model", "mlp", "--device", "cpu-core-avx2", "--devices", "2", "--trials", "2"}),
                  2, {"--trials: only with --measure"});
  args = base;
  for (const char* x : {"--trials", "-1"}) args.push_back(x);
  expect_rejected(run_cli(args), 2, {"--trials: expected rounds >= 0"});
  args = base;
  for (const char* x : {"--trial-band", "-0.5"}) args.push_back(x);
  expect_rejected(run_cli(args), 2, {"--trial-band: expected a fraction >= 0"});
  args = base;
  for (const char* x : {"--trial-seconds", "-1"}) args.push_back(x);
  expect_rejected(run_cli(args), 2, {"--trial-seconds: expected seconds >= 0"});
  expect_rejected(
      run_cli({"plan", "--model", "mlp", "--device", "cpu-core-avx2", "--devices", "2", "--trial-seconds", "1"}), 2,
      {"--trial-seconds: only with --measure"});
}

}  // namespace
}  // namespace pw::test
