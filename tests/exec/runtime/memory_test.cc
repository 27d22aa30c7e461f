// Re-materialization saves memory as the simulator predicts.
#include <doctest/doctest.h>

#include "exec/profile/profiler.h"
#include "exec/runtime/run_pipeline.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"
#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;

TEST_CASE("runtime memory: with recompute a stage's peak activations are <= simulated + 10% and below no-recompute") {
  const models::Model model = testing::tiny_model("gpt", 8);
  const int M = 4;
  int64_t measured[2][2] = {};
  int64_t predicted[2][2] = {};
  MeasureOptions mo;
  mo.micro_batch = 2;
  mo.reps = 1;
  mo.warmup = 0;
  mo.threads = 1;
  mo.optimizer = "sgd";
  const models::Profile profile = measure_profile(model, mo);
  for (bool recompute : {false, true}) {
    const planner::Plan plan = even_plan(model, 2, M, 2, planner::ScheduleKind::gpipe, recompute);
    PipelineRunOptions o;
    o.steps = 2;
    o.threads_per_worker = 1;
    const PipelineRunResult r = run_pipeline(model, plan, o);
    const sim::StageCosts costs = sim::stage_costs_from_plan(plan, profile);
    sim::SimOptions so;
    so.record_trace = true;
    const sim::SimResult sr =
        sim::simulate(sim::schedule_for_plan(plan, costs), costs, sim::network_for_plan(plan, nullptr), so);
    for (int s = 0; s < 2; ++s) {
      measured[recompute][s] = r.peak_activation_bytes[s];
      predicted[recompute][s] = sr.report.devices[s].peak_memory_bytes - costs.weights_optimizer_bytes[s];
    }
  }
  for (int s = 0; s < 2; ++s) {
    CAPTURE(s);
    CAPTURE(measured[1][s]);
    CAPTURE(predicted[1][s]);
    CHECK(measured[1][s] < measured[0][s]);
    CHECK(static_cast<double>(measured[1][s]) <= 1.1 * static_cast<double>(predicted[1][s]));
  }
}
