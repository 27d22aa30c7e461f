// CLI tests of the limits every input file shares with the flags (models/limits.h), the plan
// checks every command shares (planner/plan.h), and the one-line rule for failures (notes are
// deferred, tools/notes.h): each case is a reproducer of a value that once crashed (exit 70),
// allocated gigabytes, or was silently truncated or ignored. Each refusal is exit 2, one line,
// nothing on stdout and nothing written.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::expect_rejected;
using pw::test::run_cli;
using pw::test::ScratchDir;
using pw::test::slurp;

namespace {

// A run trace of a 2-stage 1F1B run of 2 micro-batches (simulate --replay's input), one
// iteration, with `edit` applied to its JSON.
std::string run_trace(const ScratchDir& dir, const std::function<void(Json&)>& edit) {
  Json events = Json::array();
  int64_t t = 0;
  auto op = [&](int device, const char* kind, int stage, int mb) {
    events.push_back({{"device", device},
                      {"op", kind},
                      {"stage", stage},
                      {"micro_batch", mb},
                      {"iteration", 0},
                      {"start_ns", t},
                      {"end_ns", t + 10}});
    t += 10;
  };
  for (int mb = 0; mb < 2; ++mb) op(0, "F", 0, mb);
  for (int mb = 0; mb < 2; ++mb) op(1, "F", 1, mb), op(1, "BW", 1, mb);
  for (int mb = 0; mb < 2; ++mb) op(0, "BW", 0, mb);
  for (int d = 0; d < 2; ++d) op(d, "step", -1, -1);
  Json j{{"format", "pipewright.run-trace/1"},
         {"schedule", "1f1b"},
         {"stages", 2},
         {"micro_batches", 2},
         {"predicted",
          {{"forward_ns", {10, 10}},
           {"backward_input_ns", {10, 10}},
           {"backward_weight_ns", {10, 10}},
           {"step_ns", Json::array()}}},
         {"trace",
          {{"format", "pipewright.trace/1"},
           {"source", "simulated"},
           {"num_devices", 2},
           {"events", events},
           {"memory", Json::array()}}}};
  edit(j);
  return dir.write("rt.json", j.dump());
}

// A plan of the mlp on 4 a100-80g (its cluster and profile embedded): 4 stages on devices 3, 2,
// 1, 0, batch 8 in 4 micro-batches of 2; with `chunks` 2, interleaved on 2 devices.
Json make_plan(const ScratchDir& dir, int chunks = 1) {
  std::vector<std::string> args = {"plan",
                                   "--model",
                                   "mlp",
                                   "--depth",
                                   "4",
                                   "--width",
                                   "64",
                                   "--device",
                                   "a100-80g",
                                   "--devices",
                                   chunks > 1 ? "2" : "4",
                                   "--batch",
                                   "8",
                                   "--micro-batches",
                                   "4",
                                   "--partitioner",
                                   "even",
                                   "-o",
                                   dir.file("plan.json")};
  if (chunks > 1) args.insert(args.end(), {"--schedule", "interleaved-1f1b", "--chunks", std::to_string(chunks)});
  const CliResult r = run_cli(args);
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  return Json::parse(slurp(dir.file("plan.json")));
}

// simulate --plan and schedule export --plan of the edited plan: both refuse it alike.
void expect_plan_refused(const ScratchDir& dir, const Json& plan, const std::vector<std::string>& needles) {
  const std::string file = dir.write("bad.json", plan.dump());
  expect_rejected(run_cli({"simulate", "--plan", file, "--trace", dir.file("t.json")}), 2, needles);
  expect_rejected(run_cli({"schedule", "export", "--plan", file, "-o", dir.file("s.csv")}), 2, needles);
  CHECK(!dir.exists("t.json"));
  CHECK(!dir.exists("s.csv"));
}

}  // namespace

TEST_CASE("simulate --replay: stages or micro_batches beyond the flags' range are refused before allocating") {
  ScratchDir dir;
  CHECK(run_cli({"simulate", "--replay", run_trace(dir, [](Json&) {})}).rc == 0);
  for (const char* key : {"stages", "micro_batches"})
    for (const Json& v : {Json(1000000000), Json(2147483648LL), Json(4294967298LL), Json(1e9)}) {
      CAPTURE(key);
      CAPTURE(v.dump());
      const std::string f = run_trace(dir, [&](Json& j) { j[key] = v; });
      expect_rejected(run_cli({"simulate", "--replay", f}), 2,
                      {"rt.json: /" + std::string(key) + ": expected an integer in [1, " +
                       (std::string(key) == "stages" ? "65536" : "1048576") + "]"});
    }
  // Within each range but 4M ops together: refused as one schedule too large.
  const std::string big = run_trace(dir, [](Json& j) {
    j["stages"] = 65536;
    j["micro_batches"] = 1048576;
  });
  expect_rejected(run_cli({"simulate", "--replay", big}), 2, {"ops in one schedule"});
}

TEST_CASE("simulate --replay: a 64-bit handoff_ns or prediction is refused, not wrapped") {
  ScratchDir dir;
  std::string f = run_trace(dir, [](Json& j) { j["handoff_ns"] = 9223372036854775807LL; });
  expect_rejected(run_cli({"simulate", "--replay", f}), 2,
                  {"/handoff_ns: expected an integer in [0, 1000000000000000], got 9223372036854775807"});
  f = run_trace(dir, [](Json& j) { j["predicted"]["forward_ns"][1] = 18446744073709551615ULL; });
  expect_rejected(run_cli({"simulate", "--replay", f}), 2, {"/predicted/forward_ns/1: expected an integer in"});
  f = run_trace(dir, [](Json& j) { j["trace"]["events"][0]["iteration"] = 4294967296LL; });
  expect_rejected(run_cli({"simulate", "--replay", f}), 2, {"/trace/events/0/iteration", "got 4294967296"});
}

TEST_CASE("schedule import: a micro-batch index of 999,999,999 is refused at once") {
  ScratchDir dir;
  const std::string csv = dir.write("a.csv", "0F999999999,0B999999999\n");
  expect_rejected(run_cli({"schedule", "import", csv, "-o", dir.file("s.json")}), 2,
                  {"a.csv: row 1, column 1: micro-batch index of \"0F999999999\": expected an integer in [0, 1048575]"},
                  &dir, {"a.csv"});
  // Within the range, but beyond what the file's actions can cover: refused before the
  // schedule is sized by it.
  const std::string gap = dir.write("b.csv", "0F0,0B0\n1F0,1B0,1F500000,1B500000\n");
  expect_rejected(run_cli({"schedule", "import", gap}), 2,
                  {"b.csv: row 2, column 3: micro-batch index 500000 in a CSV of 6 actions"});
}

TEST_CASE("schedule import --plan: a CSV of another device layout than the plan is refused") {
  ScratchDir dir;
  REQUIRE(run_cli({"schedule", "export", "--stages", "4", "--micro-batches", "4", "-o", dir.file("s.csv")}).rc == 0);
  // The 4 stages on 4 ranks, priced with an interleaved plan of the 4 stages on 2 devices (once
  // exit 70 in the network model: rank 2 has no device).
  make_plan(dir, 2);
  expect_rejected(run_cli({"schedule", "import", dir.file("s.csv"), "--plan", dir.file("plan.json")}), 2,
                  {"s.csv with ", "plan.json: 4 ranks, but the plan runs on 2 pipeline devices"});
  make_plan(dir);
  CHECK(run_cli({"schedule", "import", dir.file("s.csv"), "--plan", dir.file("plan.json")}).rc == 0);
  const std::string swapped = dir.write("b.csv",
                                        "1F0,1F1,1F2,1B0,1F3,1B1,1B2,1B3\n0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\n"
                                        "2F0,2F1,2B0,2F2,2B1,2F3,2B2,2B3\n3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3\n");
  expect_rejected(run_cli({"schedule", "import", swapped, "--plan", dir.file("plan.json")}), 2,
                  {"stage 0 is on rank 1, but the plan puts it on pipeline device 0 (device 3)"});
}

TEST_CASE("a plan's threads_per_stage, stage devices and replicas are checked by every command") {
  ScratchDir dir;
  const Json plan = make_plan(dir);
  REQUIRE(plan["stages"].size() == 4);
  REQUIRE(plan["stages"][0]["devices"] == Json::array({3}));
  CHECK(run_cli({"simulate", "--plan", dir.file("plan.json")}).rc == 0);

  Json p = plan;
  p["threads_per_stage"] = 1000000000;
  expect_plan_refused(dir, p, {"bad.json: /threads_per_stage: expected an integer in [0, 65536], got 1000000000"});
  p = plan;
  p["stages"][1]["devices"] = {99};
  p["stages"][1]["replicas"] = 1;
  expect_plan_refused(dir, p, {"bad.json: /stages/1/devices/0: device 99 is not in its cluster", "(4 devices, 0..3)"});
  p = plan;
  Json hundred = Json::array();
  for (int d = 3; d < 103; ++d) hundred.push_back(d);
  p["stages"][0]["devices"] = hundred;
  p["stages"][0]["replicas"] = 100;
  expect_plan_refused(dir, p, {"/stages/0/devices/1: device 4 is not in its cluster"});
  p = plan;
  p["stages"][1]["devices"] = {3};
  expect_plan_refused(dir, p, {"/stages/1/devices: device 3 is also stage 0's"});
  p = plan;
  p["stages"][1]["replicas"] = 7;
  expect_plan_refused(dir, p, {"/stages/1/replicas: 7, but the stage lists 1 device"});
  p = plan;
  p["stages"][1]["replicas"] = 4294967297LL;
  expect_plan_refused(dir, p, {"/stages/1/replicas: expected an integer in [1, 16777216]"});
  p = plan;
  p["stages"][1]["devices"] = {1, 1};
  expect_plan_refused(dir, p, {"/stages/1/devices/1: device 1 appears twice"});
}

TEST_CASE("simulate and schedule export refuse a plan whose batch is not micro-batch size x count, as run does") {
  ScratchDir dir;
  const Json plan = make_plan(dir);
  Json p = plan;
  p["batch"] = 9;
  expect_plan_refused(dir, p, {"bad.json: /batch: 9 is not micro_batch_size x num_micro_batches"});
  p = plan;
  p["num_micro_batches"] = 3;
  expect_plan_refused(dir, p,
                      {"/batch: 8 is not micro_batch_size x num_micro_batches (micro_batch_size 2 x "
                       "num_micro_batches 3 = 6)"});
  p = plan;
  p["remainder_rule"] = "last-smaller";
  p["batch"] = 7;
  CHECK(run_cli({"simulate", "--plan", dir.write("ok.json", p.dump())}).rc == 0);
  p["batch"] = 5;
  expect_plan_refused(dir, p, {"does not leave a smaller last micro-batch"});
  p["remainder_rule"] = "spread";
  expect_plan_refused(dir, p, {"/remainder_rule: expected \"none\" or \"last-smaller\", got \"spread\""});
  p = plan;
  p["num_micro_batches"] = 4294967300LL;
  expect_plan_refused(dir, p, {"/num_micro_batches: expected an integer in [1, 1048576]"});
}

TEST_CASE("cluster flags: a fractional or hexadecimal byte count and --intra-node with --levels are refused") {
  expect_rejected(run_cli({"cluster", "--devices", "2", "--memory", "1.5"}), 2,
                  {"--memory: expected a whole number of bytes, got \"1.5\""});
  expect_rejected(run_cli({"cluster", "--devices", "2", "--memory", "0x10"}), 2,
                  {"--memory: expected a size in bytes", "in decimal, got \"0x10\""});
  expect_rejected(run_cli({"cluster", "--devices", "2", "--bandwidth", "0x1p30"}), 2, {"--bandwidth", "in decimal"});
  CHECK(run_cli({"cluster", "--devices", "2", "--memory", "1.5GiB"}).rc == 0);  // a whole number of bytes
  for (const char* flag : {"--intra-node", "--interconnect"})
    expect_rejected(run_cli({"cluster", "--levels", "2,2", flag, "nvlink3"}), 2,
                    {std::string(flag) + ": not used with --levels"});
  expect_rejected(run_cli({"cluster", "--levels", "2,2", "--devices-per-node", "2"}), 2,
                  {"--devices-per-node: not used with --levels"});
}

TEST_CASE("zoo sizing flags of another model family are refused, not ignored") {
  expect_rejected(run_cli({"model", "gpt", "--depth", "3"}), 2, {"--depth: sizes mlp, not gpt"});
  expect_rejected(run_cli({"model", "mlp", "--layers", "3"}), 2, {"--layers: sizes gpt, not mlp"});
  expect_rejected(run_cli({"model", "mlp", "--image", "64"}), 2, {"--image: sizes the conv nets"});
  expect_rejected(run_cli({"model", "resnet50", "--dropout-permille", "100"}), 2,
                  {"--dropout-permille: sizes vgg16, not resnet50"});
  expect_rejected(run_cli({"plan", "--model", "mlp", "--device", "a100-80g", "--devices", "2", "--vocab", "9"}), 2,
                  {"--vocab: sizes gpt, not mlp"});
  CHECK(run_cli({"model", "mlp", "--depth", "3"}).rc == 0);
  CHECK(run_cli({"model", "vgg16", "--image", "64", "--dropout-permille", "100"}).rc == 0);
}

TEST_CASE("a failure after a note prints one line: the error, not the note") {
  ScratchDir dir;
  make_plan(dir);
  // A cluster other than the plan's (a note) too small for it (the error).
  REQUIRE(run_cli({"cluster", "--devices", "1", "-o", dir.file("one.json")}).rc == 0);
  expect_rejected(run_cli({"simulate", "--plan", dir.file("plan.json"), "--cluster", dir.file("one.json")}), 2,
                  {"plan.json: /stages/0/devices/0: device 3 is not in ", "one.json (1 devices, 0..0)"});
  // On success the note still comes, after the report.
  REQUIRE(run_cli({"cluster", "--devices", "4", "--bandwidth", "1GB/s", "-o", dir.file("four.json")}).rc == 0);
  const CliResult ok = run_cli({"simulate", "--plan", dir.file("plan.json"), "--cluster", dir.file("four.json")});
  CHECK(ok.rc == 0);
  CHECK(ok.err.find("note: " + dir.file("four.json") + " is not the cluster") == 0);
}

TEST_CASE("simulate --profile reads PipeDream's graph.txt as plan --profile does") {
  ScratchDir dir;
  const std::string graph =
      dir.write("graph.txt",
                "node1 -- Input -- forward_compute_time=1.000, backward_compute_time=0.000, activation_size=64.0, "
                "parameter_size=0.0\n"
                "node2 -- Linear -- forward_compute_time=2.000, backward_compute_time=4.000, activation_size=64.0, "
                "parameter_size=4096.0\n"
                "node3 -- Linear -- forward_compute_time=2.000, backward_compute_time=4.000, activation_size=64.0, "
                "parameter_size=4096.0\n"
                "\tnode1 -- node2\n\tnode2 -- node3\n");
  const CliResult p = run_cli({"plan", "--profile", graph, "--devices", "2", "--batch", "4", "--micro-batches", "4",
                               "--partitioner", "even", "-o", dir.file("plan.json")});
  CAPTURE(p.err);
  REQUIRE(p.rc == 0);
  const CliResult s = run_cli({"simulate", "--plan", dir.file("plan.json"), "--profile", graph, "--json"});
  CAPTURE(s.err);
  CHECK(s.rc == 0);
  CHECK(s.err.empty());  // the profile the plan was made from: no note
  CHECK(Json::parse(s.out)["makespan_ns"].get<int64_t>() > 0);
}

#ifdef PW_HAVE_EXEC
TEST_CASE("run: the banner goes out with the first step's line, never alone before a fault") {
  // This run diverges at step 3 (a fault in step 1 prints the fault line alone: the MPI case
  // of tests/exec/runtime/mpi_cli_test.sh).
  const CliResult r = run_cli({"run", "--model", "mlp", "--stages", "2", "--micro-batches", "2", "--steps", "5", "--lr",
                               "1e6", "--optimizer", "sgd", "--threads", "1", "--log-every", "1"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 4);
  const size_t banner = r.err.find("run: ");
  REQUIRE(banner == 0);
  CHECK(r.err.find("\nstep 1/5") == r.err.find('\n'));  // the line after the banner is step 1's
}

TEST_CASE("run: a plan's threads_per_stage is bounded like --threads") {
  ScratchDir dir;
  Json p = make_plan(dir);
  p["threads_per_stage"] = 60000;
  p["inputs"].erase("cluster");  // its 4 devices would refuse the threads first; run uses this machine's cores
  const std::string file = dir.write("bad.json", p.dump());
  expect_rejected(run_cli({"run", "--plan", file, "--steps", "1", "--json"}), 2,
                  {"bad.json: /threads_per_stage: expected at most ", "threads (4 x this machine's", "got 60000"});
}
#endif
