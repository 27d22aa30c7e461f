// CLI tests of `pipewright whatif`: published closed forms through the tool (Megatron-LM's
// parameter count and FLOPs per iteration), JSON rows, output files, and bad input.
#include <doctest/doctest.h>

#include <cmath>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

void expect_error(const CliResult& r, int rc, const std::string& needle, const ScratchDir& dir,
                  const std::vector<std::string>& keep) {
  pw::test::expect_rejected(r, rc, {needle}, &dir, keep);
}

// A GPT through `whatif throughput` (one cell, full re-materialization), as JSON.
Json gpt_cell(int64_t l, int64_t h, int64_t heads, int64_t s, int64_t v, int64_t b, int k) {
  CliResult r = run_cli({"whatif",
                         "throughput",
                         "--family",
                         "gpt",
                         "--layers",
                         std::to_string(l),
                         "--d-model",
                         std::to_string(h),
                         "--heads",
                         std::to_string(heads),
                         "--seq",
                         std::to_string(s),
                         "--vocab",
                         std::to_string(v),
                         "--batch",
                         std::to_string(b),
                         "--tied-embeddings",
                         "-K",
                         std::to_string(k),
                         "-M",
                         "1",
                         "--recompute",
                         "on",
                         "--partitioner",
                         "gpipe-greedy",
                         "--device",
                         "a100-80g",
                         "--json"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json doc = Json::parse(r.out);
  CHECK(doc.at("format") == "pipewright.whatif-rows/1");
  Json rows = doc.at("rows");
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0]["feasible"] == true);
  return rows[0];
}

}  // namespace

TEST_CASE("whatif reproduces Megatron-LM's parameter count and FLOPs per iteration") {
  struct Case {
    int64_t l, h, heads, s, v, b;
    int k;
  };
  for (const Case& c :
       {Case{4, 256, 8, 128, 1000, 8, 1}, Case{8, 512, 8, 256, 5000, 4, 2}, Case{6, 768, 12, 512, 50257, 2, 3}}) {
    CAPTURE(c.l);
    CAPTURE(c.h);
    Json row = gpt_cell(c.l, c.h, c.heads, c.s, c.v, c.b, c.k);
    const double l = c.l, h = c.h, s = c.s, V = c.v, B = c.b;
    // Megatron-LM (Narayanan et al. 2021, eq. 2 and 3) with tied embeddings. Its count omits the
    // final layer norm's gain and bias (2h), which the model has: the tool reports formula + 2h.
    const double megatron_params = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    CHECK(row["parameters"].get<double>() == doctest::Approx(megatron_params + 2 * h).epsilon(1e-12));
    CHECK(row["parameters"].get<int64_t>() == 12 * c.l * c.h * c.h + 13 * c.l * c.h + (c.v + c.s) * c.h + 2 * c.h);
    // FLOPs per iteration with full re-materialization (every stage recomputes).
    const double megatron_flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    CHECK(row["flops_per_iteration"].get<double>() == doctest::Approx(megatron_flops).epsilon(1e-12));
    CHECK(row["stages_used"] == c.k);
  }
}

TEST_CASE("whatif max-model --json: rows per device count, naive < pipelined, SVG file") {
  ScratchDir dir;
  CliResult r = run_cli({"whatif",          "max-model", "--family",        "gpt",      "--d-model", "2048",
                         "--heads",         "16",        "--seq",           "1024",     "--vocab",   "32000",
                         "--batch",         "16",        "--device",        "v100-32g", "--devices", "1,2,4",
                         "--optimizer",     "adam",      "--micro-batches", "16",       "--json",    "--svg",
                         dir.file("mm.svg")});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json doc = Json::parse(r.out);
  CHECK(doc.at("format") == "pipewright.whatif-rows/1");
  Json rows = doc.at("rows");
  REQUIRE(rows.size() == 4);
  for (const char* key : {"devices", "mode", "layers", "parameters", "weights_optimizer_bytes", "activation_bytes"})
    for (const Json& row : rows) CHECK(row.contains(key));
  CHECK(rows[0]["mode"] == "naive");
  CHECK(rows[0]["devices"] == 1);
  CHECK(rows[1]["mode"] == "pipelined");
  CHECK(rows[1]["devices"] == 1);
  CHECK(rows[0]["layers"].get<int>() < rows[1]["layers"].get<int>());
  CHECK(rows[1]["layers"].get<int>() < rows[2]["layers"].get<int>());
  CHECK(rows[2]["layers"].get<int>() < rows[3]["layers"].get<int>());
  for (const Json& row : rows)
    CHECK(row["weights_optimizer_bytes"].get<int64_t>() + row["activation_bytes"].get<int64_t>() <=
          row["device_memory_bytes"].get<int64_t>());
  std::string svg = pw::test::slurp(dir.file("mm.svg"));
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
}

TEST_CASE("whatif sweep: CSV and JSON with -o, one row per grid point") {
  ScratchDir dir;
  std::string spec = dir.write("sweep.json", R"({
    "format": "pipewright.sweep/1",
    "fixed": {"family": "gpt", "d_model": 1024, "heads": 16, "seq": 512, "vocab": 32000, "batch": 16,
              "device": "a100-40g", "recompute": "on"},
    "axes": {"layers": [8, 16], "devices": [2, 4], "schedule": ["1f1b", "zb-h1"]}
  })");
  CliResult r = run_cli(
      {"whatif", "sweep", "--spec", spec, "-o", dir.file("out"), "--threads", "2", "--svg", dir.file("sweep.svg")});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  CHECK(dir.entries() == std::vector<std::string>{"out.csv", "out.json", "sweep.json", "sweep.svg"});
  std::string csv = pw::test::slurp(dir.file("out.csv"));
  CHECK(pw::test::line_count(csv) == 9);
  CHECK(csv.rfind("point,layers,devices,schedule,feasible,reason,parameters,", 0) == 0);
  Json j = pw::load_json_file(dir.file("out.json"));
  CHECK(j["format"] == "pipewright.sweep-result/1");
  REQUIRE(j["rows"].size() == 8);
  CHECK(j["rows"][0]["layers"] == 8);
  CHECK(j["rows"][7]["schedule"] == "zb-h1");
  for (const Json& row : j["rows"]) {
    CHECK(row["feasible"] == true);
    CHECK(row["source"] == "sim");
    CHECK(row["throughput_samples_per_s"].get<double>() > 0);
  }
  // zb-h1 splits B and W and fills the bubble: never slower than 1f1b at the same point.
  for (int i = 0; i < 8; i += 2)
    CHECK(j["rows"][i + 1]["iteration_s"].get<double>() <= j["rows"][i]["iteration_s"].get<double>());
}

TEST_CASE("whatif sweep: a chart that cannot be drawn fails before computing, progress goes to a pipe as lines") {
  ScratchDir dir;
  // 1000 points, 200 lines per devices value: refused before the first point is evaluated
  // (--progress would otherwise have printed a line), nothing written.
  std::string big = dir.write("big.json", pw::test::slurp(std::string(PW_REPO_DIR) + "/bench/whatif_sweep_1000.json"));
  CliResult r =
      run_cli({"whatif", "sweep", "--spec", big, "-o", dir.file("out"), "--svg", dir.file("s.svg"), "--progress"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--svg: the sweep has 200 lines (combinations of the axes other than devices)") !=
        std::string::npos);
  CHECK(r.err.find("sweep:") == std::string::npos);
  CHECK(dir.entries() == std::vector<std::string>{"big.json"});

  // stderr is a file here, not a terminal: progress comes as whole lines (from the start with
  // --progress; without it, once a run takes over a second), the last at 100%.
  std::string spec = dir.write("small.json", R"({"format": "pipewright.sweep/1",
    "fixed": {"family": "gpt", "d_model": 512, "heads": 8, "seq": 256, "vocab": 1000, "batch": 8, "recompute": "on"},
    "axes": {"layers": [4, 8], "devices": [1, 2, 4, 8, 16]}})");
  // The results never overwrite the spec they came from.
  expect_error(run_cli({"whatif", "sweep", "--spec", spec, "-o", dir.file("small")}), 2,
               "-o: " + dir.file("small") + ".json is the --spec file", dir, {"big.json", "small.json"});
  r = run_cli({"whatif", "sweep", "--spec", spec, "-o", dir.file("grid"), "--threads", "1", "--progress"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.find('\r') == std::string::npos);
  CHECK(r.err.find("sweep: 1/10 10% ") != std::string::npos);
  CHECK(r.err.find("sweep: 10/10 100% ") != std::string::npos);
  r = run_cli({"whatif", "sweep", "--spec", spec, "-o", dir.file("quiet"), "--no-progress"});
  CHECK(r.rc == 0);
  CHECK(r.err.find("sweep: 1/10") == std::string::npos);
}

TEST_CASE("whatif bad input: unknown device (2), empty axis (2), nothing fits (3), no files left") {
  ScratchDir dir;
  expect_error(run_cli({"whatif", "max-model", "--device", "tpu-v9", "--devices", "8", "--svg", dir.file("a.svg")}), 2,
               "unknown device kind \"tpu-v9\"", dir, {});
  expect_error(run_cli({"whatif", "throughput", "--device", "gpu-x", "-K", "2", "--svg", dir.file("a.svg")}), 2,
               "unknown device kind \"gpu-x\"", dir, {});
  std::string spec = dir.write("empty.json", R"({"format": "pipewright.sweep/1",
    "axes": {"layers": [8, 16], "devices": []}})");
  expect_error(run_cli({"whatif", "sweep", "--spec", spec, "-o", dir.file("out")}), 2, "/axes/devices: empty axis", dir,
               {"empty.json"});
  expect_error(run_cli({"whatif", "max-model", "--family", "gpt", "--d-model", "8192", "--heads", "64", "--vocab",
                        "32000", "--device", "tpu-v2-core", "--devices", "1,8", "--svg", dir.file("a.svg"), "--json"}),
               3, "does not fit", dir, {"empty.json"});
  expect_error(run_cli({"whatif", "max-model", "--family", "resnet50", "--devices", "8"}), 2, "fixed depth", dir,
               {"empty.json"});
  expect_error(run_cli({"whatif", "throughput", "-K", "2", "--baseline", "4,1", "--batch", "8", "-M", "1,2"}), 2,
               "--baseline", dir, {"empty.json"});
}
