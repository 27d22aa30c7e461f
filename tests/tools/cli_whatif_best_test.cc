// CLI tests of `pipewright whatif best` (the 3D layout search): the SC'21 GPT-3 175B layout
// through --tp/--pp/--dp, the JSON format, and bad input / nothing fits.
#include <doctest/doctest.h>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;

namespace {
const std::vector<std::string> kGpt3 = {"whatif",  "best", "--layers",  "96",   "--d-model", "12288",
                                        "--heads", "96",   "--seq",     "2048", "--vocab",   "51200",
                                        "--batch", "1536", "--devices", "1024"};
std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}
}  // namespace

TEST_CASE("whatif best: the paper's layout as axes, JSON rows with the time split") {
  CliResult r =
      run_cli(with(kGpt3, {"--tp", "8", "--pp", "16", "--dp", "8", "--micro-batch", "1", "--chunks", "1", "--recompute",
                           "on", "--sequence-parallel", "off", "--zero1", "off", "--json", "--all"}));
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  Json j = Json::parse(r.out);
  CHECK(j["format"] == "pipewright.whatif-best/1");
  CHECK(j["candidates"] == 1);
  const Json& b = j["best"];
  CHECK(b["tp"] == 8);
  CHECK(b["pp"] == 16);
  CHECK(b["dp"] == 8);
  CHECK(b["schedule"] == "1f1b");
  CHECK(b["feasible"] == true);
  const double tflops = b["tflops_per_device"].get<double>();
  CHECK(tflops > 140 * 0.85);
  CHECK(tflops < 140 * 1.15);
  const double parts =
      b["compute_s"].get<double>() + b["bubble_s"].get<double>() + b["tp_s"].get<double>() + b["dp_s"].get<double>();
  CHECK(parts <= b["iteration_s"].get<double>() * (1 + 1e-9));
  CHECK(j["all"].size() == 1);
  CHECK(j["frontier"].size() == 1);
}

TEST_CASE("whatif best: Megatron-LM's kernels and SC'21's links give the paper's 140 TFLOP/s within 5%") {
  const std::vector<std::string> paper = {"--tp",
                                          "8",
                                          "--pp",
                                          "16",
                                          "--dp",
                                          "8",
                                          "--micro-batch",
                                          "1",
                                          "--chunks",
                                          "1",
                                          "--recompute",
                                          "on",
                                          "--sequence-parallel",
                                          "off",
                                          "--zero1",
                                          "off",
                                          "--json"};
  auto tflops = [&](const std::vector<std::string>& more) {
    CliResult r = run_cli(with(with(kGpt3, paper), more));
    CAPTURE(r.err);
    REQUIRE(r.rc == 0);
    return Json::parse(r.out)["best"]["tflops_per_device"].get<double>();
  };
  const double megatron = tflops({"--kernels", "megatron", "--interconnect", "ib-200g"});
  CHECK(megatron > 140 * 0.95);
  CHECK(megatron < 140 * 1.05);
  // Pipewright's GPT has no dropout: faster; the explicit constant is the curve's override.
  CHECK(tflops({"--interconnect", "ib-200g"}) > megatron);
  CHECK(tflops({"--kernels", "megatron", "--interconnect", "ib-200g", "--efficiency", "0"}) == megatron);
  CHECK(tflops({"--kernels", "megatron", "--interconnect", "ib-200g", "--efficiency", "0.5"}) < megatron * 0.9);
}

TEST_CASE("whatif best: bad input exits 2, nothing fitting exits 3, one line each") {
  pw::test::expect_rejected(run_cli(with(kGpt3, {"--recompute", "maybe"})), 2, {"--recompute"});
  pw::test::expect_rejected(run_cli(with(kGpt3, {"--device", "tpu-v9"})), 2, {"tpu-v9"});
  pw::test::expect_rejected(run_cli(with(kGpt3, {"--devices", "1001"})), 2, {"--devices"});
  pw::test::expect_rejected(run_cli(with(kGpt3, {"--tp", "0"})), 2, {"--tp"});
  pw::test::expect_rejected(run_cli(with(kGpt3, {"--kernels", "apex"})), 2, {"--kernels", "pipewright or megatron"});
  pw::test::expect_rejected(run_cli(with(kGpt3, {"--efficiency", "-0.1"})), 2, {"--efficiency"});
  // 175B on 8 devices: no layout holds the weights and optimizer state.
  pw::test::expect_rejected(run_cli({"whatif", "best", "--layers", "96", "--d-model", "12288", "--heads", "96",
                                     "--batch", "64", "--devices", "8"}),
                            3, {"no layout fits"});
}
