// CLI of the fidelity mechanisms (issue 12): profile --measure at several points, run --compare
// --run-trace / --svg, simulate --replay, and their rejections. No timing is checked.
#include <doctest/doctest.h>

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
  expect_rejected(run_cli({"simulate", "--replay", t, "--stages", "2"}), 2, {"--stages: not used with --replay"});
  expect_rejected(run_cli({"simulate", "--replay", dir.file("missing.json")}), 2, {"missing.json"});
}

}  // namespace
}  // namespace pw::test
