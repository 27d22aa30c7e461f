// CLI tests of `pipewright model`, `profile` and `demo`: results, exit codes, one-line errors
// naming the file / JSON path / flag, and no output file left behind on bad input.
#include <doctest/doctest.h>

#include <filesystem>

#include "planner/plan.h"

#include "models/json_util.h"
#include "models/layer_graph.h"
#include "models/profile.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

// A valid three-layer model file: x -> fc -> loss.
Json tiny_model() {
  return Json::parse(R"({
    "format": "pipewright.model/1", "name": "tiny", "batch": 4,
    "layers": [
      {"name": "x", "kind": "input", "inputs": [], "output_shape": [3], "attrs": {}},
      {"name": "fc", "kind": "linear", "inputs": ["x"], "output_shape": [5], "attrs": {"in": 3, "out": 5}},
      {"name": "loss", "kind": "mse_loss", "inputs": ["fc"], "output_shape": [1], "attrs": {"dim": 5}}
    ]})");
}

// Exit code 2, exactly one line on stderr containing every `needles`, nothing but `keep` in dir.
void expect_bad(const CliResult& r, const std::vector<std::string>& needles, const ScratchDir& dir,
                const std::vector<std::string>& keep) {
  pw::test::expect_rejected(r, 2, needles, &dir, keep);
}

}  // namespace

TEST_CASE("model gpt --json reports the closed-form parameter count") {
  CliResult r = run_cli({"model", "gpt", "--layers", "48", "--d-model", "2048", "--heads", "32", "--ffn", "8192",
                         "--seq", "1024", "--vocab", "32000", "--json"});
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  Json j = Json::parse(r.out);
  const int64_t l = 48, h = 2048, f = 8192, s = 1024, V = 32000;
  CHECK(j["parameters"].get<int64_t>() == l * (4 * h * h + 2 * h * f + f + 9 * h) + V * h + s * h + 2 * h + h * V);
  CHECK(j["layers"] == 53);
  CHECK(j["family"] == "gpt");
  // forward: 48 blocks of 24sh^2 + 4s^2h (f = 4h) per token row, logits 2shV, plus elementwise.
  const double fwd = l * (24.0 * s * h * h + 4.0 * s * s * h) + 2.0 * s * h * V;
  CHECK(j["forward_flops_per_sample"].get<double>() == doctest::Approx(fwd).epsilon(1e-3));
}

TEST_CASE("model -o writes a model file that reads back with the same summary") {
  ScratchDir dir;
  const std::string out = dir.file("vgg.json");
  CliResult r = run_cli({"model", "vgg16", "--image", "32", "--width-divisor", "8", "--classes", "10", "-o", out});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vgg16-i32-w8") != std::string::npos);
  CHECK(r.out.find("531634") != std::string::npos);
  pw::models::Model m = pw::models::load_model_file(out);
  CHECK(m.size() == 39);
  CliResult back = run_cli({"model", out, "--json"});
  REQUIRE(back.rc == 0);
  Json j = Json::parse(back.out);
  CHECK(j["parameters"] == 531634);
  CHECK(j["file"] == out);
  CHECK(j["family"].is_null());
  CHECK(dir.entries() == std::vector<std::string>{"vgg.json"});
}

TEST_CASE("profile prints a table, writes a profile file, and is deterministic") {
  ScratchDir dir;
  const std::string model = dir.write("tiny.json", tiny_model().dump());
  const std::string out = dir.file("p.json");
  std::vector<std::string> args = {"profile", "--model", model,  "--device", "a100-80g", "--micro-batch",
                                   "8",       "--dtype", "fp32", "-o",       out};
  CliResult r = run_cli(args);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("profile of tiny on a100-80g (analytic, micro-batch 8)") != std::string::npos);
  CHECK(r.out.find("total: forward") != std::string::npos);
  pw::models::Profile p = pw::models::load_profile_file(out);
  CHECK(p.layers.size() == 3);
  CHECK(p.micro_batch == 8);
  CHECK(p.layers[0].is_data_loading);
  CHECK(p.layers[1].parameter_bytes == 80);
  CHECK(p.layers[1].optimizer_bytes == 160);  // adam: 16 - 2 * 4 bytes per parameter
  // The shared default on an accelerator (models/defaults.h): bf16, Adam priced as mixed-precision.
  const CliResult bf = run_cli({"profile", "--model", model, "--device", "a100-80g", "--micro-batch", "8", "--json"});
  REQUIRE(bf.rc == 0);
  const pw::models::Profile mixed = pw::models::profile_from_json(Json::parse(bf.out));
  CHECK(mixed.layers[1].parameter_bytes == 40);   // 2 bytes per parameter
  CHECK(mixed.layers[1].optimizer_bytes == 280);  // adam-mixed: 18 - 2 * 2 bytes per parameter
  // Zoo sizing flags shape a zoo model; they are refused for a model file.
  const CliResult sized =
      run_cli({"profile", "--model", "gpt", "--layers", "2", "--d-model", "64", "--heads", "4", "--seq", "16",
               "--vocab", "100", "--device", "a100-80g", "--micro-batch", "1", "--json"});
  REQUIRE(sized.rc == 0);
  CHECK(pw::models::profile_from_json(Json::parse(sized.out)).layers.size() == 7);
  pw::test::expect_rejected(
      run_cli({"profile", "--model", model, "--layers", "2", "--device", "a100-80g", "--micro-batch", "1"}), 2,
      {"--layers: sizing options apply to a zoo family"});
  CHECK(run_cli(args).out == r.out);
  CHECK(pw::test::slurp(out) == pw::test::slurp(out));

  CliResult j = run_cli({"profile", "--model", "default", "--device", "cpu-core-avx2", "--micro-batch", "2", "--json",
                         "--optimizer", "sgd"});
  REQUIRE(j.rc == 0);
  pw::models::Profile q = pw::models::profile_from_json(Json::parse(j.out));
  CHECK(q.source == "analytic");
  CHECK(q.layers.size() == 9);
  CHECK(q.layers[2].optimizer_bytes == 0);  // sgd keeps nothing beyond weights and gradients
}

TEST_CASE("demo: the main job describes, profiles, plans, simulates, runs and compares") {
  CliResult r = run_cli({"demo", "--steps", "2"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("gpt-l4-d128") != std::string::npos);
  CHECK(r.out.find("parameters   867072") != std::string::npos);
  CHECK(r.out.find("profile of gpt-l4-d128 on cpu-core-avx2") != std::string::npos);
#ifdef PW_HAVE_EXEC
  for (const char* section : {"== 3. Measured profile", "== 4. Plan for", "== 5. Simulation of the plan",
                              "== 6. Training it as a real pipeline", "== 7. Predicted vs measured"})
    CHECK_MESSAGE(r.out.find(section) != std::string::npos, section);
  CHECK(r.out.find("step 2/2") != std::string::npos);
  CHECK(r.out.find("iteration: predicted ") != std::string::npos);
#endif
  // The analytic part (sections 1 and 2) is deterministic; measured times are not.
  const std::string analytic = r.out.substr(0, r.out.find("== 3."));
  const std::string again = run_cli({"demo", "--steps", "1"}).out;
  CHECK(again.substr(0, again.find("== 3.")) == analytic);
}

TEST_CASE("demo --out-dir creates its folder and writes the profile, plan and timelines, bad flags exit 2") {
  ScratchDir dir;
  CliResult r = run_cli({"demo", "--steps", "1", "--out-dir", dir.file("new/out")});
  REQUIRE(r.rc == 0);
#ifdef PW_HAVE_EXEC
  for (const char* f :
       {"profile.json", "plan.json", "predicted.trace.json", "predicted.svg", "measured.trace.json", "measured.svg"})
    CHECK_MESSAGE(dir.exists(std::string("new/out/") + f), f);
  CHECK_NOTHROW(pw::planner::load_plan_file(dir.file("new/out/plan.json")));
  CHECK(r.out.find("machine load: ") != std::string::npos);
  // The run's hand-off spin, as the tool chose it for this machine now (exec/machine_load.h).
  CHECK((r.out.find("hand-offs: spin 5000 us then sleep") != std::string::npos ||
         r.out.find("hand-offs: spin 50 us then sleep") != std::string::npos));
#endif
  CHECK(run_cli({"demo", "--steps", "0"}).rc == 2);
  pw::write_file_atomic(dir.file("a-file"), "x");
  expect_rejected(run_cli({"demo", "--out-dir", dir.file("a-file")}), 2, {"--out-dir", dir.file("a-file")});
}

TEST_CASE("bad model files: exit 2, one line naming the file and JSON path, no output file") {
  struct Case {
    std::string what;
    std::string content;
    std::vector<std::string> needles;
  };
  const std::string good = tiny_model().dump(2);
  auto edited = [](auto edit) {
    Json j = tiny_model();
    edit(j);
    return j.dump();
  };
  std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() / 2), {"invalid JSON", "truncated"}},
      {"empty file", "", {"empty"}},
      {"not an object", "[1, 2]", {"/: expected an object"}},
      {"wrong format",
       edited([](Json& j) { j["format"] = "pipewright.profile/1"; }),
       {"/format: expected \"pipewright.model/1\""}},
      {"wrong type", edited([](Json& j) { j["batch"] = "four"; }), {"/batch: expected an integer, got string"}},
      {"unknown kind",
       edited([](Json& j) { j["layers"][1]["kind"] = "conv3d"; }),
       {"/layers/1/kind: unknown layer kind \"conv3d\""}},
      {"missing field",
       edited([](Json& j) { j["layers"][1].erase("name"); }),
       {"/layers/1/name: missing required field"}},
      {"negative size",
       edited([](Json& j) { j["layers"][1]["output_shape"][0] = -5; }),
       {"/layers/1/output_shape/0: expected an integer >= 1, got -5"}},
      {"negative attr",
       edited([](Json& j) { j["layers"][1]["attrs"]["in"] = -3; }),
       {"/layers/1/attrs/in: expected an integer >= 0"}},
      {"fractional attr",
       edited([](Json& j) { j["layers"][1]["attrs"]["in"] = 2.5; }),
       {"/layers/1/attrs/in: expected an integer"}},
      {"overflowing number",
       R"({"format": "pipewright.model/1", "name": "t", "batch": 1e999, "layers": []})",
       {"number overflow", "expected a finite number"}},
      {"cycle", edited([](Json& j) { j["layers"][0]["inputs"] = {"loss"}; }), {"cycle"}},
      {"unknown input",
       edited([](Json& j) { j["layers"][2]["inputs"] = {"nope"}; }),
       {"/layers/2/inputs/0: layer \"loss\" reads unknown layer \"nope\""}},
      {"empty model", edited([](Json& j) { j["layers"] = Json::array(); }), {"/layers: the model has no layers"}},
      {"attrs disagree with shape",
       edited([](Json& j) { j["layers"][1]["attrs"]["out"] = 7; }),
       {"layer \"fc\" (linear): output_shape [5] must end in out = 7"}},
      {"zero attr", edited([](Json& j) { j["layers"][1]["attrs"]["in"] = 0; }), {"attribute \"in\" must be >= 1"}},
      {"huge shape",
       edited([](Json& j) {
         j["layers"][0]["output_shape"] = {1 << 30, 1 << 30, 1 << 30};
       }),
       {"layer \"x\": output_shape has more than 2^56 elements"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ScratchDir dir;
    const std::string model = dir.write("m.json", c.content);
    std::vector<std::string> needles = c.needles;
    needles.push_back(model);
    expect_bad(run_cli({"model", model, "-o", dir.file("out.json")}), needles, dir, {"m.json"});
    expect_bad(run_cli({"profile", "--model", model, "--device", "a100-80g", "--micro-batch", "2", "-o",
                        dir.file("out.json")}),
               needles, dir, {"m.json"});
  }
}

TEST_CASE("bad flags: exit 2, one line naming the flag, no output file") {
  ScratchDir dir;
  const std::string model = dir.write("m.json", tiny_model().dump());
  const std::string out = dir.file("out.json");
  const std::vector<std::string> keep = {"m.json"};
  auto profile = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"profile", "--model", model, "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  expect_bad(profile({"--device", "tpu-v9", "--micro-batch", "2"}), {"--device: unknown device kind \"tpu-v9\""}, dir,
             keep);
  expect_bad(profile({"--micro-batch", "2"}), {"--device: required unless --measure"}, dir, keep);
  expect_bad(profile({"--device", "a100-80g", "--micro-batch", "0"}),
             {"--micro-batch: expected an integer >= 1, got 0"}, dir, keep);
  expect_bad(profile({"--device", "a100-80g", "--micro-batch", "-3"}), {"--micro-batch"}, dir, keep);
  expect_bad(profile({"--device", "a100-80g", "--micro-batch", "two"}), {"--micro-batch"}, dir, keep);
  expect_bad(profile({"--device", "a100-80g", "--micro-batch", "2", "--efficiency", "1.5"}), {"--efficiency"}, dir,
             keep);
  expect_bad(profile({"--device", "a100-80g", "--micro-batch", "2", "--optimizer", "lamb"}),
             {"--optimizer: unknown optimizer \"lamb\""}, dir, keep);
  expect_bad(run_cli({"profile", "--model", dir.file("missing.json"), "--device", "a100-80g", "--micro-batch", "1"}),
             {"--model", "missing.json"}, dir, keep);

  expect_bad(run_cli({"model", "gpt", "--d-model", "100", "--heads", "3", "-o", out}),
             {"--d-model: 100 is not divisible by --heads 3"}, dir, keep);
  expect_bad(run_cli({"model", "gpt", "--layers", "-1", "-o", out}), {"--layers"}, dir, keep);
  expect_bad(run_cli({"model", "mlp", "--batch", "0", "-o", out}), {"--batch"}, dir, keep);
  expect_bad(run_cli({"model", "vgg16", "--image", "8", "-o", out}), {"--image"}, dir, keep);
  // Sizes past tools/flag_checks.cc's ranges are refused before the model is built.
  expect_bad(run_cli({"model", "gpt", "--d-model", "1073741824", "--heads", "1", "--ffn", "1073741824", "-o", out}),
             {"--d-model", "[1, 131072]"}, dir, keep);
  expect_bad(run_cli({"model", "alexnet", "-o", out}), {"\"alexnet\" is neither a model family"}, dir, keep);
  expect_bad(run_cli({"model", model, "--layers", "3", "-o", out}), {"--layers: sizing options apply to a zoo family"},
             dir, keep);
  expect_bad(run_cli({"demo", "--device", "nope"}), {"--device"}, dir, keep);
}
