// `run --compare --device cuda` on a GPU (exec/runtime/compare_session.h, device_compare.h): a
// prediction from a profile measured on the GPU beside the run, with each GPU's device memory,
// the note when several streams share the card, and the run trace replayed (needs a GPU).
// Structure only: how close the prediction comes is the device check's (a timing threshold is
// no pass/fail test).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "exec/runtime/compare_session.h"
#include "exec/runtime/run_pipeline.h"
#include "exec/runtime/run_report.h"
#include "models/zoo.h"
#include "planner/schedule.h"
#include "sim/replay.h"
#include "tests/exec/cuda/gpu_pipeline.h"

namespace pw::exec::cuda {
namespace {

using testing::gpt_4x256;

struct Compared {
  PipelineRunResult run;
  Prediction prediction;
};

// A run of `stages` stages (1F1B, one stream each on cuda:0) with --compare's session around it.
Compared compare(const models::Model& m, const planner::Plan& plan) {
  PipelineRunOptions o;
  o.warmup_steps = 3;
  o.steps = 6;
  o.seed = 11;
  o.optimizer.kind = OptimizerKind::adam;
  o.optimizer.lr = default_learning_rate(OptimizerKind::adam);
  o.prefetch = 0;
  o.timeout = std::chrono::seconds(120);
  o.device = Device::cuda(0);
  const int devices = plan.num_stages();
  CompareSession session(m, plan, o, devices, false);
  CHECK_FALSE(session.measure_between_steps(o, int64_t{1} << 40));  // on GPUs: after the run
  Compared c;
  c.run = run_pipeline(m, plan, o);
  c.prediction = session.predict();
  return c;
}

void check_structure(const Compared& c, int workers) {
  const Prediction& p = c.prediction;
  CHECK(std::isfinite(p.iteration_ms));
  CHECK(p.iteration_ms > 0);
  CHECK(c.run.median_iteration_ms > 0);
  CHECK(p.profile.source == "measured");
  REQUIRE(p.peak_memory_bytes.size() == static_cast<size_t>(workers));
  REQUIRE(c.run.peak_memory_bytes.size() == static_cast<size_t>(workers));
  for (int d = 0; d < workers; ++d) {
    CAPTURE(d);
    CHECK(p.peak_memory_bytes[d] > 0);
    CHECK(c.run.peak_memory_bytes[d] > 0);
    CHECK(p.costs.forward_ns.at(d) > 0);
  }
  REQUIRE(p.costs.step_ns.size() == static_cast<size_t>(workers));
  for (int64_t ns : p.costs.step_ns) CHECK(ns > 0);
  REQUIRE(p.gpu.has_value());
  const GpuComparison& g = *p.gpu;
  REQUIRE(g.cards.size() == 1);
  CHECK(g.cards[0].gpu == Device::cuda(0));
  CHECK(static_cast<int>(g.cards[0].workers.size()) == workers);
  CHECK(g.profile_device.find("cuda:0") != std::string::npos);
  REQUIRE(g.measured_peak_bytes.size() == 1);
  REQUIRE(g.predicted_peak_bytes.size() == 1);
  CHECK(g.measured_peak_bytes[0] > 0);
  CHECK(g.predicted_peak_bytes[0] > 0);
}

TEST_CASE("run --compare on a GPU: one stream, a prediction from the GPU's profile beside the run") {
  const models::Model m = gpt_4x256();
  const planner::Plan plan = even_plan(m, 1, 8, 2, planner::ScheduleKind::one_f_one_b, false, 1);
  const Compared c = compare(m, plan);
  check_structure(c, 1);
  CHECK(c.prediction.gpu->note.empty());
  CHECK(c.prediction.gpu->shared_iteration_ms == 0);
  const Json j = RunReport{plan, "gpt", 1, 6, 3, 0, "", c.run, &c.prediction};
  CHECK(j.at("per_stage").at(0).at("predicted_peak_memory_bytes").get<int64_t>() > 0);
  CHECK(j.at("device_memory").at(0).at("peak_bytes").get<int64_t>() > 0);
  CHECK_FALSE(j.contains("compare_note"));
}

TEST_CASE("run --compare on a GPU: 4 streams of one card, the note and the prediction that accounts for sharing") {
  const models::Model m = gpt_4x256();
  const planner::Plan plan = even_plan(m, 4, 8, 2, planner::ScheduleKind::one_f_one_b, false, 1);
  const Compared c = compare(m, plan);
  check_structure(c, 4);
  const GpuComparison& g = *c.prediction.gpu;
  CHECK(g.note.find("4 on cuda:0") != std::string::npos);
  CHECK(std::isfinite(g.shared_iteration_ms));
  CHECK(g.shared_iteration_ms >= c.prediction.iteration_ms);
  const Json j = RunReport{plan, "gpt", 4, 6, 3, 0, "", c.run, &c.prediction};
  CHECK(j.at("compare_note") == g.note);
  CHECK(j.at("predicted_shared_iteration_ms").get<double>() == g.shared_iteration_ms);
  for (int d = 0; d < 4; ++d) CHECK(j.at("per_stage").at(d).at("predicted_peak_memory_bytes").get<int64_t>() > 0);
  // --run-trace of a GPU run replays as a host run's does (simulate --replay).
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("pw_gpu_compare_" + std::to_string(::getpid()) + ".run.json");
  write_run_trace(file.string(), plan, c.run.trace, 3, &c.prediction, 4);
  std::ifstream in(file);
  const sim::RunTrace rt = sim::run_trace_from_json(Json::parse(in));
  std::filesystem::remove(file);
  const sim::ReplayResult r = sim::replay_run_trace(rt, file.string());
  CHECK(r.measured_ns > 0);
  CHECK(r.replayed_ns > 0);
  CHECK(r.predicted_ns > 0);
  CHECK_FALSE(r.ops.empty());
}

}  // namespace
}  // namespace pw::exec::cuda
