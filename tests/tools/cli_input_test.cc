// CLI regression tests of eight kinds of bad input: each is one line on stderr,
// exit 2 (or a finished run), nothing on stdout and no output file. Also the shared
// mechanisms: the reader entry point (models/input_file.h), escaped error text
// (models/error_text.h) and the numeric flag checks (tools/flag_checks.h).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <string>

#include "models/json_util.h"
#include "planner/plan.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::expect_rejected;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

const std::string kVggGraph = std::string(PW_PIPEDREAM_DIR) + "/vgg16/graph.txt";

std::string deep_brackets(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("bad input 1: a sweep axis value nested 100,000 brackets deep is one line, exit 2") {
  ScratchDir dir;
  const std::string spec = dir.write(
      "sweep.json", R"({"format": "pipewright.sweep/1", "axes": {"batch": [)" + deep_brackets(100000) + "]}}");
  expect_rejected(run_cli({"whatif", "sweep", "--spec", spec, "-o", dir.file("out")}), 2,
                  {"sweep.json", "nested more than 1000 levels deep"}, &dir, {"sweep.json"});
  // Just inside the limit: parsed, then rejected for its type with a cut, one-line value.
  const std::string ok_depth =
      dir.write("sweep2.json", R"({"format": "pipewright.sweep/1", "axes": {"batch": [)" + deep_brackets(990) + "]}}");
  expect_rejected(run_cli({"whatif", "sweep", "--spec", ok_depth}), 2, {"/axes/batch/0", "[[...]]"});
}

TEST_CASE("bad input 2: /dev/zero, /dev/urandom and a FIFO are rejected at once by every reader") {
  ScratchDir dir;
  const std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (const std::string& dev : {std::string("/dev/zero"), std::string("/dev/urandom"), fifo}) {
    CAPTURE(dev);
    const std::vector<std::string> needles = {dev + ": not a regular file"};
    expect_rejected(run_cli({"model", dev}), 2, needles);
    expect_rejected(run_cli({"plan", "--profile", dev, "--devices", "2"}), 2, needles);
    expect_rejected(run_cli({"plan", "--profile", dev + ".txt", "--devices", "2"}), 2, {".txt: cannot open"});
    expect_rejected(run_cli({"import", "pipedream", dev}), 2, needles);
    expect_rejected(run_cli({"whatif", "sweep", "--spec", dev}), 2, needles);
    expect_rejected(run_cli({"simulate", "--plan", dev}), 2, needles);
  }
  CHECK(dir.entries() == std::vector<std::string>{"fifo"});
}

TEST_CASE("bad input 8: a directory is \"is a directory\", a NaN flag is \"not a number\"") {
  ScratchDir dir;
  expect_rejected(run_cli({"model", dir.file("")}), 2, {"is a directory"});
  expect_rejected(run_cli({"plan", "--profile", dir.file(""), "--devices", "2"}), 2, {"is a directory"});
  expect_rejected(
      run_cli({"simulate", "--uniform", "--stages", "2", "--micro-batches", "4", "--t-f", "nan", "--t-b", "1"}), 2,
      {"--t-f", "not a number"});
  expect_rejected(
      run_cli({"simulate", "--uniform", "--stages", "2", "--micro-batches", "4", "--t-f", "1", "--t-b", "-inf"}), 2,
      {"--t-b", "not finite"});
  expect_rejected(
      run_cli({"simulate", "--uniform", "--stages", "nan", "--micro-batches", "4", "--t-f", "1", "--t-b", "1"}), 2,
      {"--stages", "not a number"});
  expect_rejected(
      run_cli({"simulate", "--uniform", "--stages", "2.5", "--micro-batches", "4", "--t-f", "1", "--t-b", "1"}), 2,
      {"--stages", "expected an integer"});
}

TEST_CASE("bad input 6: values holding a newline are escaped, the rejection stays one line") {
  expect_rejected(run_cli({"model", "gpt\nsecond line"}), 2, {"gpt\\nsecond line"});
  expect_rejected(
      run_cli({"simulate", "--uniform", "--stages", "2", "--micro-batches", "4", "--t-f", "1\n2", "--t-b", "1"}), 2,
      {"--t-f", "1\\n2"});
  ScratchDir dir;
  const std::string spec =
      dir.write("s.json", "{\"format\": \"pipewright.sweep/1\", \"axes\": {\"device\": [\"a\\nb\\u0007" +
                              std::string(500, 'x') + "\"]}}");
  const CliResult r = run_cli({"whatif", "sweep", "--spec", spec});
  expect_rejected(r, 2, {"/axes/device/0"});
  CHECK(r.err.size() < 400);  // the 500-character value is cut
}

TEST_CASE("bad input 5: huge but legal-looking values are bounded up front") {
  expect_rejected(run_cli({"whatif", "max-model", "--max-layers", "1e9"}), 2, {"--max-layers", "[1, 1048576]"});
  expect_rejected(run_cli({"whatif", "max-model", "--batch", "1e13"}), 2, {"--batch"});
  ScratchDir dir;
  const std::string spec = dir.write(
      "s.json", R"({"format": "pipewright.sweep/1", "fixed": {"family": "mlp"}, "axes": {"batch": [1000000000]}})");
  expect_rejected(run_cli({"whatif", "sweep", "--spec", spec}), 2, {"/axes/batch/0", "[1, 4194304]"});
}

TEST_CASE("bad input 7: a profile with zero costs plans without inf or null, and simulate reads that plan") {
  ScratchDir dir;
  // vgg16's graph.txt with every time zeroed: a valid profile whose costs are all 0.
  CliResult imp = run_cli({"import", "pipedream", kVggGraph, "-o", dir.file("vgg.json")});
  REQUIRE(imp.rc == 0);
  Json p = Json::parse(pw::test::slurp(dir.file("vgg.json")));
  for (Json& l : p["layers"])
    for (const char* k : {"forward_ns", "backward_ns", "backward_input_ns", "backward_weight_ns"})
      if (l.contains(k)) l[k] = 0;
  dir.write("zero.json", p.dump());
  CliResult plan = run_cli({"plan", "--profile", dir.file("zero.json"), "--devices", "2", "-o", dir.file("plan.json")});
  CAPTURE(plan.err);
  REQUIRE(plan.rc == 0);
  const std::string text = pw::test::slurp(dir.file("plan.json"));
  CHECK(text.find("null") == std::string::npos);
  CHECK(plan.out.find("inf") == std::string::npos);
  CliResult sim = run_cli({"simulate", "--plan", dir.file("plan.json"), "--profile", dir.file("zero.json")});
  CAPTURE(sim.err);
  CHECK(sim.rc == 0);
}

TEST_CASE("size and bandwidth flags take units, bad units are one line") {
  const CliResult a = run_cli(
      {"plan", "--profile", kVggGraph, "--devices", "4", "--memory", "80GiB", "--bandwidth", "100Gbps", "--json"});
  CAPTURE(a.err);
  REQUIRE(a.rc == 0);
  const CliResult b = run_cli({"plan", "--profile", kVggGraph, "--devices", "4", "--memory", "85899345920",
                               "--bandwidth", "12.5GB/s", "--json"});
  REQUIRE(b.rc == 0);
  CHECK(Json::parse(a.out) == Json::parse(b.out));  // 80GiB == 85899345920 bytes, 100Gbps == 12.5GB/s
  // The top of a size's range (1e18 bytes) is a size too, not "Could not convert".
  const CliResult top =
      run_cli({"plan", "--profile", kVggGraph, "--devices", "4", "--memory-limit", "1000000000000000000", "--json"});
  CAPTURE(top.err);
  CHECK(top.rc == 0);
  CHECK(Json::parse(top.out)["inputs"]["options"]["memory_limit_bytes"] == 1000000000000000000);
  expect_rejected(run_cli({"plan", "--profile", kVggGraph, "--devices", "4", "--memory-limit", "2000000000000000000"}),
                  2, {"--memory-limit", "expected a value in [0, 1e+18]"});
  expect_rejected(run_cli({"plan", "--profile", kVggGraph, "--devices", "4", "--memory", "80XB"}), 2,
                  {"--memory", "a size in bytes"});
  expect_rejected(run_cli({"plan", "--profile", kVggGraph, "--devices", "4", "--bandwidth", "nan"}), 2,
                  {"--bandwidth", "not a number"});
  expect_rejected(run_cli({"plan", "--profile", kVggGraph, "--levels", "4,4", "--bandwidths", "10Gbps,inf",
                           "--objective", "pipedream"}),
                  2, {"--bandwidths", "not finite"});
}

#ifdef PW_HAVE_EXEC
TEST_CASE("bad input 3: run/train --data pointing at a directory or a device is one line, before any banner") {
  ScratchDir dir;
  expect_rejected(run_cli({"run", "--model", "gpt", "--stages", "2", "--micro-batches", "2", "--steps", "1", "--data",
                           dir.file("")}),
                  2, {"--data", "is a directory"});
  expect_rejected(run_cli({"train", "--model", "gpt", "--steps", "1", "--data", "/dev/zero"}), 2,
                  {"--data", "not a regular file"});
}

TEST_CASE("bad input 6: a diverging train run is one line, no step lines before it") {
  // A numerical fault (exit 4, tools/signals.h) names the step, stage and layer.
  expect_rejected(run_cli({"train", "--model", "mlp", "--steps", "5", "--lr", "1e6", "--optimizer", "sgd"}), 4,
                  {"numerical fault: step ", "stage 0", "layer "});
}

TEST_CASE("bad input 4: sizes that would be allocated are checked against this machine first") {
  const std::vector<std::string> run = {"run", "--model", "gpt", "--stages", "2", "--micro-batches",
                                        "2",   "--steps", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = run;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_rejected(run_cli(with({"--micro-batch-size", "1e9"})), 2, {"--micro-batch and", "memory"});
  expect_rejected(run_cli(with({"--vocab", "1e9"})), 2, {"--vocab", "[1, 16777216]"});
  expect_rejected(run_cli(with({"--d-model", "1e9"})), 2, {"--d-model"});
  expect_rejected(run_cli(with({"--threads", "1000000000"})), 2, {"--threads", "cores"});
  expect_rejected(run_cli({"train", "--model", "gpt", "--steps", "1", "--batch", "1e9"}), 2, {"--batch", "memory"});
  expect_rejected(run_cli({"train", "--model", "gpt", "--steps", "1", "--vocab", "100000", "--d-model", "100000"}), 2,
                  {"memory"});
}
#endif
