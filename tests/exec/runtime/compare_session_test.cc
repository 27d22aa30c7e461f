// run --compare's orchestration (exec/runtime/compare_session.h): the memory budget that decides
// whether the profile rounds run between a run's steps, on a model small enough to count by hand.
#include "exec/runtime/compare_session.h"

#include <doctest/doctest.h>

#include "models/layer_graph.h"

using namespace pw;
using namespace pw::exec;

namespace {

// x (4 values per sample) -> fc (4 -> 2 with bias: 10 parameters); 40 bytes of activations per
// sample (x's output 16, fc's stashed input 16 and output 8; models/optimizer_memory.h).
models::Model one_linear() {
  models::LayerSpec in;
  in.name = "x";
  in.kind = models::LayerKind::input;
  in.output_shape = {4};
  models::LayerSpec fc;
  fc.name = "fc";
  fc.kind = models::LayerKind::linear;
  fc.output_shape = {2};
  fc.attrs = {{"in", 4}, {"out", 2}};
  fc.inputs = {"x"};
  return models::Model("one-linear", {in, fc}, 8);
}

PipelineRunOptions sgd_momentum_run() {
  PipelineRunOptions o;
  o.warmup_steps = 2;
  o.steps = 4;
  o.optimizer.kind = OptimizerKind::sgd;
  o.optimizer.momentum = 0.9;  // 12 bytes per parameter
  return o;
}

}  // namespace

TEST_CASE("compare memory: the run's tensors and the profile's copies, by hand") {
  const models::Model m = one_linear();
  const planner::Plan plan = even_plan(m, 1, 4, 2, planner::ScheduleKind::gpipe, false);
  const PipelineRunOptions o = sgd_momentum_run();
  // Run: 10 x 12 parameter bytes + 4 micro-batches of 2 x 40 = 120 + 320 = 440.
  // Copies: max(devices x (120 + 80), 440).
  const CompareMemory two = compare_memory(m, plan, o.optimizer, 2);
  CHECK(two.run_bytes == 440);
  CHECK(two.copies_bytes == 440);
  const CompareMemory three = compare_memory(m, plan, o.optimizer, 3);
  CHECK(three.run_bytes == 440);
  CHECK(three.copies_bytes == 600);
  PipelineRunOptions adam = o;
  adam.optimizer.kind = OptimizerKind::adam;  // 16 bytes per parameter: 160 + 320
  CHECK(compare_memory(m, plan, adam.optimizer, 1).run_bytes == 480);

  // Both together in half of the memory: 880 fits in 1760 bytes, not in 1759.
  CHECK(fits_between_steps(two, 1760));
  CHECK_FALSE(fits_between_steps(two, 1759));
  CHECK(fits_between_steps(three, 2080));
  CHECK_FALSE(fits_between_steps(three, 2079));
  CHECK_FALSE(fits_between_steps(two, 0));  // unknown memory: after the run
}

TEST_CASE("compare session: rounds between the steps only for a threaded run within the budget") {
  const models::Model m = one_linear();
  const planner::Plan plan = even_plan(m, 1, 4, 2, planner::ScheduleKind::gpipe, false);
  PipelineRunOptions o = sgd_momentum_run();
  o.threads_per_worker = 1;
  {
    CompareSession threaded(m, plan, o, 2, /*ranks=*/false);
    CHECK(threaded.threads() == 1);
    CHECK_FALSE(threaded.measure_between_steps(o, 1759));
    CHECK_FALSE(static_cast<bool>(o.between_steps));
    CHECK(threaded.measure_between_steps(o, 1760));
    CHECK(static_cast<bool>(o.between_steps));
  }
  o.between_steps = nullptr;
  CompareSession rank(m, plan, o, 2, /*ranks=*/true);
  CHECK_FALSE(rank.measure_between_steps(o, int64_t{1} << 40));  // MPI ranks measure after the run
  CHECK_FALSE(static_cast<bool>(o.between_steps));
}
