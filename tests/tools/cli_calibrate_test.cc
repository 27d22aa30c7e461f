// CLI tests of `pipewright calibrate`: a small measurement of this CPU written as a device file
// that `profile --device` then prices with, and bad input (exit 2, one line, nothing written).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "models/device_file.h"
#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

// A grid of 2 sizes, 1 MiB copies, the layers of a 1-block GPT of width 16.
std::vector<std::string> small(const std::string& out) {
  return {"calibrate", "-o",
          out,         "--sizes",
          "8,16",      "--repeats",
          "1",         "--copy-bytes",
          "1MiB",      "--memory",
          "1GiB",      "--threads",
          "1",         "--layers",
          "1",         "--d-model",
          "16",        "--heads",
          "2",         "--ffn",
          "32",        "--seq",
          "8",         "--vocab",
          "32",        "--layer-batch",
          "2",         "-q"};
}

}  // namespace

TEST_CASE("calibrate: this CPU into a device file that --device reads") {
  ScratchDir dir;
  const std::string out = dir.file("cpu.json");
  const CliResult r = run_cli(small(out));
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());  // -q
  CHECK(r.out.find("device cpu-measured: ") == 0);
  CHECK(r.out.find("fp32 products: best ") != std::string::npos);
  CHECK(r.out.find("transformer_block") != std::string::npos);
  const Json j = Json::parse(pw::read_text_file(out));
  CHECK(j.at("format") == "pipewright.device/1");
  CHECK(j.at("gemm").at("sizes") == Json::array({8, 16}));
  CHECK(j.at("gemm").at("fp32").size() == 8);
  CHECK_FALSE(j.at("gemm").contains("bf16"));  // the host times fp32 only
  CHECK(j.at("memory_bytes") == int64_t{1} << 30);
  CHECK(j.at("provenance").at("command").get<std::string>().find("--sizes 8,16 --precisions fp32,tf32,bf16") !=
        std::string::npos);
  std::vector<std::string> kinds;
  for (const Json& l : j.at("layers")) {
    kinds.push_back(l.at("kind"));
    CHECK(l.at("forward_s").get<double>() > 0);
  }
  CHECK(kinds == std::vector<std::string>{"embedding", "transformer_block", "layer_norm", "lm_head", "softmax_xent"});
  const pw::models::DeviceSpec d = pw::models::device_from_json(j, "");
  CHECK(d.measured->copy_bytes_per_s > 0);
  CHECK(d.measured->launch_seconds > 0);
  // The file prices a profile at fp32 from its own table.
  const CliResult p = run_cli({"profile", "--model", "gpt", "--device", out, "--micro-batch", "2", "--json"});
  REQUIRE(p.rc == 0);
  const Json prof = Json::parse(p.out);
  CHECK(prof.at("device").at("name") == "cpu-measured");
  CHECK(prof.at("layers").at(1).at("forward_ns").get<int64_t>() > 0);
}

TEST_CASE("calibrate: bad input exits 2 with one line and writes nothing") {
  ScratchDir dir;
  const std::string out = dir.file("d.json");
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = small(out);
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  pw::test::expect_rejected(with({"--precisions", "fp64"}), 2, {"--precisions: expected fp32, tf32 or bf16"}, &dir);
  pw::test::expect_rejected(with({"--sizes", "16,8"}), 2, {"--sizes: expected ascending sizes"}, &dir);
  pw::test::expect_rejected(with({"--base", "h900"}), 2, {"unknown device kind \"h900\""}, &dir);
  pw::test::expect_rejected(with({"--device", "tpu"}), 2, {"--device: expected cpu, cuda or cuda:N"}, &dir);
  pw::test::expect_rejected(with({"--layer-model", "nosuch"}), 2, {"--layer-model"}, &dir);
  pw::test::expect_rejected(run_cli({"calibrate", "--memory", "1GiB"}), 2, {"-o: the device file to write"}, &dir);
  pw::test::expect_rejected(run_cli({"calibrate", "-o", out}), 2, {"--memory: needed without --base"}, &dir);
  // Asking for a GPU: where none can be used (every build machine), one line; on a GPU machine a
  // measured file of that card.
  const CliResult g = with({"--device", "cuda"});
  if (g.rc != 0) {
    pw::test::expect_rejected(g, 2, {"--device cuda:0: "}, &dir);
  } else {
    CHECK(Json::parse(pw::read_text_file(out)).at("gemm").contains("bf16"));
  }
}
