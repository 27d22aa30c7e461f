// CLI tests of `pipewright schedule export|import` and `plan --format`.
#include <doctest/doctest.h>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

TEST_CASE("schedule export writes PyTorch's CSV, import validates, simulates, draws and saves") {
  ScratchDir dir;
  CliResult r = run_cli({"schedule", "export", "--schedule", "1f1b", "--stages", "2", "--micro-batches", "3"});
  REQUIRE(r.rc == 0);
  CHECK(r.out == "0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n");
  r = run_cli({"schedule", "export", "--schedule", "interleaved-1f1b", "--stages", "2", "--micro-batches", "4",
               "--chunks", "2", "-o", dir.file("i.csv")});
  REQUIRE(r.rc == 0);
  r = run_cli({"schedule", "import", dir.file("i.csv"), "--t-f", "1", "--t-b", "1", "--json", "-o", dir.file("i.json"),
               "--svg", dir.file("i.svg")});
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["schedule"] == "interleaved-1f1b");
  CHECK(j["bubble_rate"].get<double>() == doctest::Approx(1.0 / 9));
  const Json s = Json::parse(pw::test::slurp(dir.file("i.json")));
  CHECK(s["format"] == "pipewright.schedule/1");
  CHECK(s["stage_device"] == Json::array({0, 1, 0, 1}));
  CHECK(dir.exists("i.svg"));
}

TEST_CASE("a plan's schedule exported and imported with the plan's costs simulates as simulate --plan") {
  ScratchDir dir;
  REQUIRE(run_cli({"model", "gpt", "--layers", "4", "--d-model", "64", "--heads", "4", "--seq", "32", "--vocab", "100",
                   "-o", dir.file("g.json")})
              .rc == 0);
  REQUIRE(run_cli({"profile", "--model", dir.file("g.json"), "--device", "a100-80g", "--micro-batch", "2", "-o",
                   dir.file("p.json")})
              .rc == 0);
  REQUIRE(run_cli({"plan", "--profile", dir.file("p.json"), "--devices", "2", "--batch", "8", "--micro-batches", "4",
                   "--schedule", "zb-h1", "--partitioner", "even", "-o", dir.file("plan.json")})
              .rc == 0);
  REQUIRE(run_cli({"schedule", "export", "--plan", dir.file("plan.json"), "--profile", dir.file("p.json"), "-o",
                   dir.file("s.csv")})
              .rc == 0);
  const CliResult imported = run_cli({"schedule", "import", dir.file("s.csv"), "--plan", dir.file("plan.json"),
                                      "--profile", dir.file("p.json"), "--json"});
  const CliResult simulated =
      run_cli({"simulate", "--plan", dir.file("plan.json"), "--profile", dir.file("p.json"), "--json"});
  REQUIRE(imported.rc == 0);
  REQUIRE(simulated.rc == 0);
  CHECK(Json::parse(imported.out)["makespan_ns"] == Json::parse(simulated.out)["makespan_ns"]);
  CHECK(Json::parse(imported.out)["schedule"] == "zb-h1");
}

TEST_CASE("schedule import: a malformed CSV is one line naming the row and column, no output") {
  ScratchDir dir;
  const std::string csv = dir.write("bad.csv", "0F0,0B0\n1F0,1Q0\n");
  pw::test::expect_rejected(run_cli({"schedule", "import", csv, "-o", dir.file("out.json")}), 2,
                            {"bad.csv: row 2, column 2: unknown action type \"Q\""}, &dir, {"bad.csv"});
  const std::string dead = dir.write("dead.csv", "0F0,0B0\n1B0,1F0\n");
  pw::test::expect_rejected(run_cli({"schedule", "import", dead}), 2, {"dead.csv: ", "deadlock"}, &dir,
                            {"bad.csv", "dead.csv"});
}

TEST_CASE("plan --format megatron|deepspeed|torch for a zoo GPT") {
  const std::vector<std::string> base = {
      "plan", "--model",         "gpt",  "--layers",   "8",        "--d-model", "256", "--heads", "4",  "--seq",
      "128",  "--vocab",         "1000", "--device",   "a100-80g", "--devices", "2",   "--batch", "16", "--partitioner",
      "even", "--micro-batches", "8",    "--schedule", "1f1b"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_cli(a);
  };
  CliResult r = with({"--format", "megatron"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.rfind("--pipeline-model-parallel-size 2 --num-layers 8 --pipeline-model-parallel-layout \"E", 0) == 0);
  CHECK(r.out.find("L\" --micro-batch-size 2 --global-batch-size 16\n") != std::string::npos);
  r = with({"--format", "deepspeed"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("num_stages = 2\nparts = [0, ") != std::string::npos);
  r = with({"--format", "torch"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("SplitPoint.BEGINNING,  # stage 1\n") != std::string::npos);
  pw::test::expect_rejected(with({"--format", "jax"}), 2, {"--format: unknown format \"jax\""}, nullptr, {});
  pw::test::expect_rejected(with({"--format", "torch", "--json"}), 2, {"--format and --json"}, nullptr, {});
}
