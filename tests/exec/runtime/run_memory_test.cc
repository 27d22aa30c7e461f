// run_memory (exec/runtime/run_memory.h): the memory a run is predicted to need before it
// allocates anything, on the host or per card.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>

#include "exec/runtime/run_memory.h"
#include "exec/runtime/run_pipeline.h"
#include "models/cost.h"
#include "models/optimizer_memory.h"
#include "models/zoo.h"
#include "sim/plan_costs.h"

using namespace pw;
using namespace pw::exec;

namespace {

models::Model run_memory_gpt(int64_t batch) {
  models::ZooOptions o;
  o.batch = batch;
  o.layers = 4;
  o.d_model = 64;
  o.heads = 2;
  o.ffn = 256;
  o.seq = 32;
  o.vocab = 128;
  return models::build_zoo_model("gpt", o);
}

int64_t host_need(const models::Model& model, const planner::Plan& plan, const OptimizerOptions& opt) {
  const auto needs = predicted_run_memory(model, plan, opt, nullptr, {});
  REQUIRE(needs.has_value());
  REQUIRE(needs->size() == 1);
  CHECK(needs->front().where == Device::cpu());
  return needs->front().bytes;
}

}  // namespace

TEST_CASE("run_memory: 1f1b needs less than gpipe on the same stages, and one stage needs the memory model's bytes") {
  const int64_t mbs = 2;
  const int m = 8;
  const models::Model model = run_memory_gpt(mbs * m);
  OptimizerOptions adam;
  adam.kind = OptimizerKind::adam;
  const int64_t gpipe = host_need(model, even_plan(model, 4, m, mbs, planner::ScheduleKind::gpipe, false), adam);
  const int64_t f1b = host_need(model, even_plan(model, 4, m, mbs, planner::ScheduleKind::one_f_one_b, false), adam);
  const int64_t recompute = host_need(model, even_plan(model, 4, m, mbs, planner::ScheduleKind::gpipe, true), adam);
  CAPTURE(gpipe);
  CAPTURE(f1b);
  CAPTURE(recompute);
  CHECK(f1b < gpipe);        // stage 0 holds 4 micro-batches in flight, not 8
  CHECK(recompute < gpipe);  // only the stages' inputs stay stashed
  // One stage, every micro-batch in flight: the bytes models::estimated_training_bytes counts
  // (parameters with Adam's state, every micro-batch's stash, the largest workspace), give or
  // take what the two count differently at the loss and the data boundary.
  const double whole = models::estimated_training_bytes(model, optimizer_memory(adam), mbs, m);
  const int64_t one = host_need(model, even_plan(model, 1, m, mbs, planner::ScheduleKind::gpipe, false), adam);
  CAPTURE(whole);
  CAPTURE(one);
  CHECK(static_cast<double>(one) <= 1.10 * whole);
  CHECK(static_cast<double>(one) >= whole / 1.10);
}

TEST_CASE("run_memory: per card, the workers whose lanes share it, and one card holds what the host would") {
  const int64_t mbs = 2;
  const int m = 4;
  const models::Model model = run_memory_gpt(mbs * m);
  const planner::Plan plan = even_plan(model, 4, m, mbs, planner::ScheduleKind::one_f_one_b, false);
  const OptimizerOptions sgd;
  const int64_t host = host_need(model, plan, sgd);
  // One GPU: four streams on cuda:0 (device_lanes.h lays them out this way).
  const std::vector<Device> one{Device::cuda(0, 0), Device::cuda(0, 1), Device::cuda(0, 2), Device::cuda(0, 3)};
  const auto shared = predicted_run_memory(model, plan, sgd, nullptr, one);
  REQUIRE(shared.has_value());
  REQUIRE(shared->size() == 1);
  CHECK(shared->front().where == Device::cuda(0));
  CHECK(shared->front().workers == std::vector<int>{0, 1, 2, 3});
  CHECK(shared->front().bytes == host);
  // Two GPUs, two workers each.
  const std::vector<Device> two{Device::cuda(0, 0), Device::cuda(0, 1), Device::cuda(1, 0), Device::cuda(1, 1)};
  const auto split = predicted_run_memory(model, plan, sgd, nullptr, two);
  REQUIRE(split.has_value());
  REQUIRE(split->size() == 2);
  CHECK(split->at(0).where == Device::cuda(0));
  CHECK(split->at(1).where == Device::cuda(1));
  CHECK(split->at(0).workers == std::vector<int>{0, 1});
  CHECK(split->at(1).workers == std::vector<int>{2, 3});
  for (const MemoryNeed& n : *split) {
    CHECK(n.bytes > 0);
    CHECK(n.bytes < host);
  }
  CHECK(split->at(0).bytes + split->at(1).bytes >= host);  // the peak of a sum is at most the sum of peaks
  CHECK(split->at(0).bytes > split->at(1).bytes);          // the first stages hold more in flight (1f1b)
  // Lanes that do not match the workers are a programming error.
  CHECK_THROWS(predicted_run_memory(model, plan, sgd, nullptr, {Device::cuda(0)}));
}

TEST_CASE("run_memory: the prediction is near what the runtime holds (gpt: gpipe, 1f1b, zb-h1, 2bw)") {
  struct Case {
    planner::ScheduleKind kind;
    int stages;
  };
  for (const Case c : {Case{planner::ScheduleKind::gpipe, 2}, Case{planner::ScheduleKind::one_f_one_b, 2},
                       Case{planner::ScheduleKind::one_f_one_b, 4}, Case{planner::ScheduleKind::zb_h1, 2},
                       Case{planner::ScheduleKind::two_bw, 2}}) {
    const int64_t mbs = 2;
    const int m = 4;
    const models::Model model = run_memory_gpt(mbs * m);
    const planner::Plan plan = plan_for_run(even_plan(model, c.stages, m, mbs, c.kind, false));
    PipelineRunOptions o;
    o.steps = 2;
    o.threads_per_worker = 1;
    const PipelineRunResult r = run_pipeline(model, plan, o);
    REQUIRE(r.peak_memory_bytes.size() == static_cast<size_t>(c.stages));
    // The runtime samples the tensors each worker holds between ops, without an op's
    // transient; the sum of its per-worker peaks is at least the peak of the sum.
    int64_t sum = 0;
    for (int64_t b : r.peak_memory_bytes) sum += b;
    const double measured = static_cast<double>(sum);
    const double predicted = static_cast<double>(host_need(model, plan, o.optimizer));
    CAPTURE(to_string(c.kind));
    CAPTURE(c.stages);
    CAPTURE(measured);
    CAPTURE(predicted);
    CHECK(predicted <= 1.10 * measured);
    CHECK(predicted >= measured / 1.10);
  }
}

TEST_CASE(
    "run_memory: an MPI rank needs its own worker's peak, all ranks the host's, rank 0 one other stage to checkpoint") {
  const int64_t mbs = 2;
  const int m = 8;
  const models::Model model = run_memory_gpt(mbs * m);
  OptimizerOptions adam;
  adam.kind = OptimizerKind::adam;
  const planner::Plan plan = plan_for_run(even_plan(model, 4, m, mbs, planner::ScheduleKind::one_f_one_b, false));
  // Each worker on a card of its own gives each worker's peak alone.
  const auto per_card = predicted_run_memory(model, plan, adam, nullptr,
                                             {Device::cuda(0), Device::cuda(1), Device::cuda(2), Device::cuda(3)});
  REQUIRE(per_card.has_value());
  REQUIRE(per_card->size() == 4);
  const int64_t all = host_need(model, plan, adam);
  // The largest state (weights and Adam's two moments, without the gradients) of stages 1-3.
  const sim::StageCosts costs = sim::stage_costs_from_plan(
      plan, models::analytic_memory_profile(model, plan.micro_batch_size, optimizer_memory(adam).name));
  int64_t largest_other = 0;
  for (int s = 1; s < 4; ++s)
    largest_other = std::max(largest_other, costs.weights_optimizer_bytes[s] - costs.parameter_bytes[s]);
  REQUIRE(largest_other > 0);
  for (int rank = 0; rank < 4; ++rank) {
    CAPTURE(rank);
    const auto need = predicted_rank_memory(model, plan, adam, nullptr, rank);
    REQUIRE(need.has_value());
    CHECK(need->own_bytes == (*per_card)[rank].bytes);
    CHECK(need->own_bytes < all);
    CHECK(need->all_bytes == all);
    CHECK(need->rank0_checkpoint_bytes == largest_other);
  }
}

TEST_CASE("run_memory: a model with a layer the cost model cannot price has no prediction") {
  using models::LayerKind;
  std::vector<models::LayerSpec> l = {
      {"input", LayerKind::input, {}, {8}, {{"dim", 8}}},
      {"mystery", LayerKind::opaque, {"input"}, {8}, {}},
      {"loss", LayerKind::mse_loss, {"mystery"}, {1}, {{"dim", 8}}},
  };
  const models::Model model("opaque", std::move(l), 4);
  planner::Plan plan = even_plan(model, 1, 2, 2, planner::ScheduleKind::gpipe, false);
  CHECK_FALSE(predicted_run_memory(model, plan, OptimizerOptions{}, nullptr, {}).has_value());
}
