// CLI tests of `pipewright run`: quick form, plan form, outputs, bad input.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "models/json_util.h"
#include "planner/plan.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::run_cli_with_data_limit;
using pw::test::ScratchDir;

namespace {
void expect_bad_run(const CliResult& r, const std::string& needle, const ScratchDir& dir,
                    const std::vector<std::string>& keep) {
  pw::test::expect_rejected(r, 2, {needle}, &dir, keep);
}

// A plan over the run's small mlp (depth 2, width 8: input, fc0, relu0, fc1, loss = 5 layers).
pw::planner::Plan mlp_plan(std::vector<std::pair<int, int>> ranges, int m) {
  pw::planner::Plan p;
  p.model = "mlp";
  p.schedule = pw::planner::ScheduleKind::gpipe;
  p.micro_batch_size = 2;
  p.num_micro_batches = m;
  p.batch = 2 * m;
  for (size_t s = 0; s < ranges.size(); ++s) {
    pw::planner::StagePlan st;
    st.first_layer = ranges[s].first;
    st.end_layer = ranges[s].second;
    static const char* const kNames[] = {"input", "fc0", "relu0", "fc1", "loss"};
    for (int l = st.first_layer; l < st.end_layer; ++l) st.layer_names.push_back(kNames[l]);
    st.devices = {static_cast<int>(s)};
    p.stages.push_back(st);
  }
  p.num_devices_used = static_cast<int>(ranges.size());
  return p;
}
std::string plan_file(const ScratchDir& dir, const pw::planner::Plan& p) {
  Json j;
  to_json(j, p);
  return dir.write("plan.json", j.dump());
}
}  // namespace

TEST_CASE("run quick form: JSON summary, progress lines, trace and SVG files") {
  ScratchDir dir;
  const CliResult r = run_cli({"run",   "--model",         "gpt",     "--layers",
                               "2",     "--d-model",       "16",      "--heads",
                               "2",     "--ffn",           "32",      "--seq",
                               "8",     "--vocab",         "64",      "--stages",
                               "2",     "--micro-batches", "4",       "--schedule",
                               "1f1b",  "--steps",         "3",       "--log-every",
                               "1",     "--json",          "--trace", dir.file("t.json"),
                               "--svg", dir.file("t.svg")});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  CHECK(j.at("losses").size() == 3);
  CHECK(j.at("samples_per_s").get<double>() > 0);
  CHECK(j.at("iteration_ms").get<double>() > 0);
  CHECK(j.at("peak_memory_bytes").size() == 2);
  CHECK(j.at("schedule") == "1f1b");
  CHECK(r.err.find("step 3/3") != std::string::npos);
  CHECK(dir.entries() == std::vector<std::string>{"t.json", "t.svg"});
  std::ifstream in(dir.file("t.json"));
  const Json t = Json::parse(in);
  CHECK(t.contains("traceEvents"));
}

TEST_CASE("run --plan: trains the plan's stages, --compare adds the prediction") {
  ScratchDir dir;
  const std::string plan = plan_file(dir, mlp_plan({{0, 2}, {2, 5}}, 2));
  const CliResult r =
      run_cli({"run", "--plan", plan, "--depth", "2", "--width", "8", "--steps", "2", "--compare", "--json"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  CHECK(j.at("losses").size() == 2);
  CHECK(j.at("predicted_iteration_ms").get<double>() > 0);
  CHECK(j.at("predicted_peak_memory_bytes").size() == 2);
}

TEST_CASE("run: bad input exits 2 with one line and writes nothing") {
  ScratchDir dir;
  const std::string plan = plan_file(dir, mlp_plan({{0, 2}, {2, 4}}, 2));
  expect_bad_run(run_cli({"run", "--plan", plan, "--depth", "2", "--width", "8", "--trace", dir.file("t.json")}),
                 "has 5 layers", dir, {"plan.json"});
  expect_bad_run(run_cli({"run", "--model", "mlp", "--depth", "2", "--stages", "9", "--micro-batches", "2", "--trace",
                          dir.file("t.json")}),
                 "only 5 layers", dir, {"plan.json"});
  expect_bad_run(run_cli({"run", "--model", "gpt", "--stages", "2", "--micro-batches", "3", "--schedule",
                          "interleaved-1f1b", "--svg", dir.file("t.svg")}),
                 "--schedule", dir, {"plan.json"});
  expect_bad_run(run_cli({"run", "--model", "mlp", "--stages", "2", "--micro-batches", "2", "--schedule", "bogus"}),
                 "unknown schedule", dir, {"plan.json"});
  expect_bad_run(run_cli({"run", "--steps", "2"}), "expected --plan", dir, {"plan.json"});
}

TEST_CASE(
    "run --plan: a replicated stage runs on threads, one worker per replica, resumes bitwise, --compare is refused") {
  ScratchDir dir;
  for (const auto kind : {pw::planner::ScheduleKind::one_f_one_b, pw::planner::ScheduleKind::pipedream_async}) {
    pw::planner::Plan p = mlp_plan({{0, 2}, {2, 5}}, 4);
    p.schedule = kind;
    p.stages[0].devices = {0, 1};
    p.stages[1].devices = {2};
    p.num_devices_used = 3;
    const std::string plan = plan_file(dir, p);
    const CliResult r = run_cli({"run", "--plan", plan, "--depth", "2", "--width", "8", "--steps", "2", "--log-every",
                                 "1", "--json", "--trace", dir.file("t.json")});
    CAPTURE(r.err);
    REQUIRE(r.rc == 0);
    const Json j = Json::parse(r.out);
    CHECK(j.at("losses").size() == 2);
    CHECK(j.at("workers") == 3);
    CHECK(j.at("peak_memory_bytes").size() == 3);
    CHECK(r.err.find("2 stages on 3 workers") != std::string::npos);
    std::ifstream in(dir.file("t.json"));
    CHECK(in.good());
    expect_bad_run(
        run_cli({"run", "--plan", plan, "--depth", "2", "--width", "8", "--compare", "--trace", dir.file("u.json")}),
        "--compare: not supported with replicated stages yet", dir, {"plan.json", "t.json"});

    // --checkpoint after 2 of 4 steps, --resume: the last 2 losses of the whole run, bit for bit.
    const std::vector<std::string> base = {"run", "--plan", plan, "--depth", "2", "--width", "8", "--json"};
    auto with = [&](std::vector<std::string> more) {
      std::vector<std::string> v = base;
      v.insert(v.end(), more.begin(), more.end());
      return run_cli(v);
    };
    const CliResult whole = with({"--steps", "4"});
    ScratchDir ck_dir;  // apart: the refusals above check that `dir` holds nothing new
    const std::string ck = ck_dir.file("ck");
    const CliResult first = with({"--steps", "2", "--checkpoint", ck});
    const CliResult rest = with({"--steps", "4", "--resume", ck});
    CAPTURE(first.err);
    CAPTURE(rest.err);
    REQUIRE(whole.rc == 0);
    REQUIRE(first.rc == 0);
    REQUIRE(rest.rc == 0);
    const auto all = Json::parse(whole.out).at("losses").get<std::vector<double>>();
    const auto tail = Json::parse(rest.out).at("losses").get<std::vector<double>>();
    REQUIRE(all.size() == 4);
    REQUIRE(tail.size() == 2);
    CHECK(tail[0] == all[2]);
    CHECK(tail[1] == all[3]);
  }
}

namespace {
// The small gpt of the quick-form test, `steps` steps, plus `more` flags.
CliResult small_gpt_run(int steps, const std::vector<std::string>& more) {
  std::vector<std::string> args{"run",
                                "--model",
                                "gpt",
                                "--layers",
                                "2",
                                "--d-model",
                                "16",
                                "--heads",
                                "2",
                                "--ffn",
                                "32",
                                "--seq",
                                "8",
                                "--vocab",
                                "64",
                                "--stages",
                                "2",
                                "--micro-batches",
                                "4",
                                "--threads",
                                "1",
                                "--steps",
                                std::to_string(steps),
                                "--json"};
  args.insert(args.end(), more.begin(), more.end());
  return run_cli(args);
}

// Iterations whose ops the Chrome trace holds, and its iteration summaries (process 2).
std::pair<std::set<int>, std::vector<int>> trace_iterations(const std::string& file) {
  std::ifstream in(file);
  const Json t = Json::parse(in);
  std::set<int> ops;
  std::vector<int> summaries;
  for (const Json& e : t.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e.at("pid") == 0) ops.insert(e.at("args").at("iteration").get<int>());
    if (e.at("pid") == 2) summaries.push_back(e.at("args").at("iteration").get<int>());
  }
  return {ops, summaries};
}
}  // namespace

TEST_CASE("run --trace of N steps keeps the last --trace-keep K iterations in full and N summaries, --trace-all all") {
  ScratchDir dir;
  const CliResult r = small_gpt_run(5, {"--trace", dir.file("t.json"), "--trace-keep", "2"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  auto [ops, summaries] = trace_iterations(dir.file("t.json"));
  CHECK(ops == std::set<int>{3, 4});
  CHECK(summaries == std::vector<int>{0, 1, 2, 3, 4});
  const CliResult all = small_gpt_run(5, {"--trace", dir.file("all.json"), "--trace-all"});
  REQUIRE(all.rc == 0);
  std::tie(ops, summaries) = trace_iterations(dir.file("all.json"));
  CHECK(ops == std::set<int>{0, 1, 2, 3, 4});
  CHECK(summaries.size() == 5);
  const CliResult dflt = small_gpt_run(3, {"--trace", dir.file("d.json")});  // default K = 20 > 3 steps
  REQUIRE(dflt.rc == 0);
  CHECK(trace_iterations(dir.file("d.json")).first == std::set<int>{0, 1, 2});
}

TEST_CASE("run --json: end-to-end samples/s over the wall clock of the timed steps, data wait, prefetch") {
  const CliResult r = small_gpt_run(4, {"--warmup-steps", "1"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  const double wall = j.at("wall_s").get<double>();
  double timed = 0;  // the timed iterations lie inside the wall-clock window
  for (const Json& ms : j.at("iteration_ms_per_step")) timed += ms.get<double>() / 1e3;
  CHECK(wall >= timed);
  CHECK(j.at("end_to_end_samples_per_s").get<double>() == doctest::Approx(4 * j.at("batch").get<double>() / wall));
  CHECK(j.at("data_wait_s").get<double>() >= 0);
  CHECK(j.at("data_wait_s").get<double>() <= wall);
  CHECK(j.at("data_bound").is_boolean());
  CHECK(j.at("prefetch") == 2);
  CHECK(j.at("format") == "pipewright.run-result/1");
  // Prefetching changes when batches are drawn, never which: same losses, bit for bit.
  for (const char* n : {"0", "5"}) {
    CAPTURE(n);
    const CliResult p = small_gpt_run(4, {"--warmup-steps", "1", "--prefetch", n});
    REQUIRE(p.rc == 0);
    CHECK(Json::parse(p.out).at("losses") == j.at("losses"));
  }
}

TEST_CASE("run: a bad --trace-keep or --prefetch exits 2 with one line and writes nothing") {
  ScratchDir dir;
  const std::vector<std::string> t{"--trace", dir.file("t.json")};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.end(), t.begin(), t.end());
    return small_gpt_run(2, more);
  };
  expect_bad_run(with({"--trace-keep", "0"}), "--trace-keep", dir, {});
  expect_bad_run(with({"--trace-keep", "-3"}), "--trace-keep", dir, {});
  expect_bad_run(with({"--trace-keep", "x"}), "--trace-keep", dir, {});
  expect_bad_run(with({"--trace-keep", "4", "--trace-all"}), "--trace-all", dir, {});
  expect_bad_run(with({"--prefetch", "-1"}), "--prefetch", dir, {});
}

TEST_CASE("run --schedule-csv: a PyTorch CSV schedule trains, and conflicting flags or a bad CSV exit 2 naming them") {
  ScratchDir dir;
  // Zero bubble in PyTorch's compute_only format: I = backward for the input, W = for the weights.
  const std::string zb = dir.write("zb.csv",
                                   "0F0,0F1,0I0,0W0,0F2,0I1,0W1,0F3,0I2,0W2,0I3,0W3\n"
                                   "1F0,1I0,1F1,1I1,1W0,1F2,1I2,1W1,1F3,1I3,1W2,1W3\n");
  const CliResult r = run_cli({"run", "--model", "mlp", "--depth", "2", "--width", "8", "--schedule-csv", zb, "--steps",
                               "2", "--json", "--trace", dir.file("t.json")});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  CHECK(j.at("schedule") == "zb-h1");
  CHECK(j.at("workers") == 2);
  CHECK(j.at("micro_batches") == 4);
  CHECK(j.at("losses").size() == 2);
  std::ifstream in(dir.file("t.json"));
  const Json t = Json::parse(in);
  int w_ops = 0;  // the W ops the CSV asked for ran (4 micro-batches x 2 stages x 2 steps)
  for (const auto& e : t.at("traceEvents"))
    if (e.value("ph", "") == "X" && e.value("cat", "") == "W") ++w_ops;
  CHECK(w_ops == 16);

  const std::string bad = dir.write("bad.csv", "0F0,0F1,0Q0\n1F0\n");
  expect_bad_run(run_cli({"run", "--model", "mlp", "--schedule-csv", bad, "--trace", dir.file("u.json")}),
                 "row 1, column 3", dir, {"bad.csv", "t.json", "zb.csv"});
  expect_bad_run(run_cli({"run", "--model", "mlp", "--schedule-csv", zb, "--stages", "2"}), "drop --stages", dir,
                 {"bad.csv", "t.json", "zb.csv"});
  expect_bad_run(run_cli({"run", "--model", "mlp", "--schedule-csv", zb, "--compare"}), "schedule import", dir,
                 {"bad.csv", "t.json", "zb.csv"});
  expect_bad_run(run_cli({"run", "--schedule-csv", zb}), "needs --model", dir, {"bad.csv", "t.json", "zb.csv"});
  const std::string uneven = dir.write("uneven.csv", "0F0,2F0,2B0,0B0\n1F0,1B0\n");
  expect_bad_run(run_cli({"run", "--model", "mlp", "--schedule-csv", uneven}), "do not divide among 2 ranks", dir,
                 {"bad.csv", "t.json", "uneven.csv", "zb.csv"});
}

namespace {
// Lines of `err` that start with `prefix`.
int count_lines(const std::string& err, const std::string& prefix) {
  int n = 0;
  for (size_t at = 0; at < err.size(); at = err.find('\n', at) + 1) {
    if (err.compare(at, prefix.size(), prefix) == 0) ++n;
    if (err.find('\n', at) == std::string::npos) break;
  }
  return n;
}
}  // namespace

TEST_CASE("run: progress lines as train's, every --log-every N steps, none for a short run by default") {
  const std::vector<std::string> quick = {"run", "--model",         "mlp", "--width",   "32", "--stages",
                                          "2",   "--micro-batches", "2",   "--threads", "1",  "--steps",
                                          "20"};
  const CliResult quiet = run_cli(quick);
  CAPTURE(quiet.err);
  REQUIRE(quiet.rc == 0);
  CHECK(count_lines(quiet.err, "step ") == 0);  // under 10 s: a quiet stderr, as train's
  CHECK(count_lines(quiet.err, "run: ") == 0);  // the banner goes out with the first line only
  std::vector<std::string> every7 = quick;
  every7.insert(every7.end(), {"--log-every", "7"});
  const CliResult r = run_cli(every7);
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  CHECK(count_lines(r.err, "step ") == 3);                      // steps 7, 14 and the last, 20
  CHECK(r.err.find("\nstep 7/20  loss ") == r.err.find('\n'));  // after the banner
  CHECK(r.err.find("\nstep 14/20  loss ") != std::string::npos);
  CHECK(r.err.find("\nstep 20/20  loss ") != std::string::npos);
  CHECK(count_lines(r.err, "run: mlp") == 1);
  std::vector<std::string> bad = quick;
  bad.insert(bad.end(), {"--log-every", "-1"});
  const CliResult b = run_cli(bad);
  CHECK(b.rc == 2);
  CHECK(b.err == "pipewright: error: --log-every: expected >= 1\n");
}

TEST_CASE("run --device: cuda runs where a GPU can be used, elsewhere it is one line naming why and exit 2") {
  const auto bad = [](const CliResult& r, const std::string& needle) { pw::test::expect_rejected(r, 2, {needle}); };
  const std::vector<std::string> quick{"run", "--model", "gpt", "--stages",  "2", "--micro-batches",
                                       "2",   "--steps", "2",   "--threads", "1", "--json"};
  const auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = quick;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  bad(run_cli(with({"--device", "tpu"})), "--device: expected cpu, cuda or cuda:N");
  bad(run_cli(with({"--gpus", "2"})), "--gpus: applies with --device cuda only");
  bad(run_cli(with({"--device", "cuda:99"})), "--device cuda:99: ");
  const CliResult cpu = run_cli(quick);
  REQUIRE(cpu.rc == 0);
  CHECK_FALSE(Json::parse(cpu.out).contains("device_lanes"));
  const CliResult gpu = run_cli(with({"--device", "cuda"}));
  if (gpu.rc == 0) {  // a machine with a usable GPU: one stream per worker, the CPU run's losses within 1e-4
    const Json g = Json::parse(gpu.out), c = Json::parse(cpu.out);
    CHECK(g.at("device_lanes") == Json::array({"cuda:0", "cuda:0/stream1"}));
    REQUIRE(g.at("losses").size() == 2);
    for (size_t i = 0; i < 2; ++i)
      CHECK(g.at("losses")[i].get<double>() == doctest::Approx(c.at("losses")[i].get<double>()).epsilon(1e-4));
    // Four streams of one card hold the whole model there: GPT 48 x 8192 (~600 GB with its
    // optimizer state) is refused before anything is allocated, naming the card.
    pw::test::expect_rejected(run_cli({"run", "--model", "gpt", "--layers", "48", "--d-model", "8192", "--stages", "4",
                                       "--micro-batches", "4", "--steps", "1", "--device", "cuda"}),
                              2, {"running gpt", "as planned needs", "on cuda:0 (workers 0-3)", "cuda:0's"});
  } else {
    bad(gpu, "--device cuda:0: ");
  }
  const CliResult prof = run_cli(
      {"profile", "--model", "gpt", "--measure", "--device", "cuda", "--micro-batch", "1", "--reps", "2", "--json"});
  if (prof.rc == 0) CHECK(Json::parse(prof.out).at("source") == "measured");
  else bad(prof, "--device cuda:0: ");
  bad(run_cli({"profile", "--model", "gpt", "--measure", "--device", "a100-80g", "--micro-batch", "1"}),
      "--device: a measured profile runs on this machine");
  const CliResult host = run_cli(
      {"profile", "--model", "gpt",       "--layers", "1",   "--d-model",     "32", "--heads", "2", "--seq", "16",
       "--vocab", "64",      "--measure", "--device", "cpu", "--micro-batch", "1",  "--reps",  "2", "--json"});
  REQUIRE(host.rc == 0);
  CHECK(Json::parse(host.out).at("source") == "measured");
}

TEST_CASE("run --compare --device: on a GPU the comparison adds device memory, the host's document is unchanged") {
  const std::vector<std::string> quick{
      "run", "--model",   "gpt", "--layers",  "1",     "--d-model",       "32", "--heads", "2", "--seq",
      "16",  "--vocab",   "64",  "--stages",  "2",     "--micro-batches", "2",  "--steps", "2", "--warmup-steps",
      "1",   "--threads", "1",   "--compare", "--json"};
  const CliResult cpu = run_cli(quick);
  CAPTURE(cpu.err);
  REQUIRE(cpu.rc == 0);
  const Json c = Json::parse(cpu.out);
  CHECK(c.at("predicted_iteration_ms").get<double>() > 0);
  for (const char* key : {"device_memory", "profile_device", "compare_note", "predicted_shared_iteration_ms"})
    CHECK_FALSE(c.contains(key));
  std::vector<std::string> on_gpu = quick;
  on_gpu.insert(on_gpu.end(), {"--device", "cuda"});
  const CliResult gpu = run_cli(on_gpu);
  if (gpu.rc == 0) {  // a machine with a usable GPU: 2 streams of cuda:0, the note and both figures
    const Json g = Json::parse(gpu.out);
    CHECK(g.at("predicted_iteration_ms").get<double>() > 0);
    CHECK(g.at("predicted_peak_memory_bytes").size() == 2);
    CHECK(g.at("device_memory").size() == 1);
    CHECK(g.at("device_memory").at(0).at("workers") == Json::array({0, 1}));
    CHECK(g.at("compare_note").get<std::string>().find("2 on cuda:0") != std::string::npos);
    CHECK(g.at("predicted_shared_iteration_ms").get<double>() >= g.at("predicted_iteration_ms").get<double>());
  } else {
    pw::test::expect_rejected(gpu, 2, {"--device cuda:0: "});
  }
}

TEST_CASE(
    "run under a data limit (ulimit -d): the schedule's own peak is checked up front, 1f1b fits where gpipe does not") {
  if (pw::test::kSanitizedBuild) {
    MESSAGE("SKIPPED: a sanitizer build cannot start under a data limit");
    return;
  }
  // GPT 8 x 256 (ffn 256), 16 micro-batches of 4 x 256 tokens on 4 stages: gpipe keeps all 16 in flight on
  // every stage (~1.9 GiB predicted), 1f1b 4, 3, 2 and 1 (~0.3 GiB; it runs in ~0.65 GB). The
  // limit leaves ~0.95 GiB once the program is loaded.
  const auto quick = [](const std::string& schedule) {
    return std::vector<std::string>{"run",    "--model",         "gpt", "--d-model",     "256", "--ffn",
                                    "256",    "--layers",        "8",   "--seq",         "256", "--stages",
                                    "4",      "--micro-batches", "16",  "--micro-batch", "4",   "--schedule",
                                    schedule, "--steps",         "1",   "--threads",     "1"};
  };
  const CliResult gpipe = run_cli_with_data_limit(1000 * 1000, quick("gpipe"));
  pw::test::expect_rejected(
      gpipe, 2, {"--micro-batch and the model's sizes: running gpt-l8-d256 as planned needs", "under ulimit -d"});
  const CliResult f1b = run_cli_with_data_limit(1000 * 1000, quick("1f1b"));
  CAPTURE(f1b.err);
  CHECK(f1b.rc == 0);
}

TEST_CASE(
    "run --compare under a data limit: a measurement that cannot fit is refused before the run, one that can runs") {
  if (pw::test::kSanitizedBuild) {
    MESSAGE("SKIPPED: a sanitizer build cannot start under a data limit");
    return;
  }
  const auto with = [](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  // GPT 8 x 512 (ffn 256) with short sequences, 4 stages of pipedream-async: the run holds the weights and
  // Adam's state once (it runs, also under 500,000 KiB), the measurement after it 4 co-run copies
  // of the whole model (~0.7 GiB, the profiler's own estimate), more than 80% of the ~0.65 GiB
  // that 700,000 KiB leave (refused up to 800,000 KiB; a process starts with a few MiB of data).
  const std::vector<std::string> async{"run",
                                       "--model",
                                       "gpt",
                                       "--d-model",
                                       "512",
                                       "--ffn",
                                       "256",
                                       "--layers",
                                       "8",
                                       "--seq",
                                       "16",
                                       "--vocab",
                                       "64",
                                       "--stages",
                                       "4",
                                       "--micro-batches",
                                       "4",
                                       "--schedule",
                                       "pipedream-async",
                                       "--steps",
                                       "1",
                                       "--threads",
                                       "1"};
  pw::test::expect_rejected(run_cli_with_data_limit(700 * 1000, with(async, {"--compare"})), 2,
                            {"--compare: measuring the prediction needs about", "4 co-run copies of gpt-l8-d512",
                             "under ulimit -d", "run without --compare"});
  const CliResult plain = run_cli_with_data_limit(700 * 1000, async);
  CAPTURE(plain.err);
  CHECK(plain.rc == 0);
  // 1f1b on 4 stages: each copy measures its worker's stages as the worker runs them (~0.4 GiB).
  // It fits once the buffers the run's workers freed into the allocator's cache (~0.5 GiB here)
  // are returned, which the measurement after the run does first (without that release this run
  // is refused, checked by removing it). 8 micro-batches: 1f1b keeps at most 4 in flight on 4
  // stages, so the peaks are those of 16 (the same ~790 MB of RSS) in half the time.
  const CliResult compared = run_cli_with_data_limit(
      1000 * 1000, {"run", "--model",    "gpt",   "--d-model", "256", "--ffn",           "256", "--layers",
                    "8",   "--seq",      "256",   "--stages",  "4",   "--micro-batches", "8",   "--micro-batch",
                    "4",   "--schedule", "1f1b",  "--steps",   "1",   "--warmup-steps",  "0",   "--threads",
                    "1",   "--compare",  "--json"});
  CAPTURE(compared.err);
  REQUIRE(compared.rc == 0);
  CHECK(Json::parse(compared.out).contains("predicted_iteration_ms"));
}
