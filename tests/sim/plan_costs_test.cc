// Stage costs of a plan from a profile.
#include <doctest/doctest.h>

#include "models/error.h"
#include "sim/plan_costs.h"

using namespace pw;

namespace {

models::Profile tiny_profile() {
  models::Profile p;
  p.model = "tiny";
  p.source = "analytic";
  p.micro_batch = 2;
  auto layer = [](std::string name, int64_t f, int64_t b, int64_t w, int64_t out, int64_t stash, int64_t params) {
    models::LayerProfile l;
    l.name = std::move(name);
    l.kind = "linear";
    l.forward_ns = f;
    l.backward_input_ns = b;
    l.backward_weight_ns = w;
    l.output_bytes = out;
    l.stash_bytes = stash;
    l.parameter_bytes = params;
    l.optimizer_bytes = 2 * params;
    l.workspace_bytes = out / 2;
    return l;
  };
  p.layers = {layer("input", 50, 0, 0, 100, 0, 0), layer("fc1", 10, 20, 30, 40, 60, 1000),
              layer("fc2", 11, 21, 31, 41, 61, 2000), layer("loss", 1, 2, 0, 4, 8, 0)};
  p.layers[0].is_data_loading = true;
  p.edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};
  return p;
}

planner::Plan tiny_plan() {
  planner::Plan plan;
  plan.model = "tiny";
  plan.schedule = planner::ScheduleKind::one_f_one_b;
  plan.batch = 16;
  plan.micro_batch_size = 4;
  plan.num_micro_batches = 4;
  planner::StagePlan a, b;
  a.first_layer = 0;
  a.end_layer = 2;
  a.layer_names = {"input", "fc1"};
  a.devices = {0};
  b.first_layer = 2;
  b.end_layer = 4;
  b.layer_names = {"fc2", "loss"};
  b.devices = {1, 2};
  b.recompute = true;
  plan.stages = {a, b};
  return plan;
}

}  // namespace

TEST_CASE("stage costs: sums per stage, linear scaling, crossing tensors, memory, allreduce") {
  const models::Cluster cl("c", models::DeviceSpec{}, {models::Level{"node", 4, 1e9, 1000}});
  const sim::StageCosts c = sim::stage_costs_from_plan(tiny_plan(), tiny_profile(), &cl);
  CHECK(c.forward_ns == std::vector<int64_t>{20, 24});  // data loading excluded, x2 samples
  CHECK(c.backward_input_ns == std::vector<int64_t>{40, 46});
  CHECK(c.backward_weight_ns == std::vector<int64_t>{60, 62});
  // Cut after fc1: input (skip edge to loss) and fc1 cross; the gradient omits the input.
  CHECK(c.activation_bytes[0] == 2 * (100 + 40));
  CHECK(c.gradient_bytes[1] == 2 * 40);
  CHECK(c.input_bytes_per_micro_batch == std::vector<int64_t>{200, 280});
  CHECK(c.stash_bytes_per_micro_batch == std::vector<int64_t>{120, 138});
  CHECK(c.parameter_bytes == std::vector<int64_t>{1000, 2000});
  CHECK(c.weights_optimizer_bytes == std::vector<int64_t>{4000, 8000});
  CHECK(c.working_bytes == std::vector<int64_t>{100, 40});
  CHECK(c.recompute == std::vector<uint8_t>{0, 1});
  CHECK(c.samples_per_micro_batch == 4);
  // Ring all-reduce of 2000 bytes over 2 replicas: 2*(1/2)*2000 ns + 2*1000 ns latency.
  CHECK(c.allreduce_ns == std::vector<int64_t>{0, 4000});
  const auto s = sim::schedule_for_plan(tiny_plan(), c);
  CHECK(s.device_ops[1].end()[-2].kind == planner::OpKind::allreduce);
  const auto r = sim::simulate(s, c, sim::network_for_plan(tiny_plan(), &cl));
  CHECK(r.report.samples_per_iteration == 16);
  CHECK(r.report.makespan_ns > 0);
}

TEST_CASE("stage costs: a plan naming layers the profile lacks is bad input") {
  planner::Plan plan = tiny_plan();
  plan.stages[1].layer_names = {"fc2", "softmax"};
  try {
    sim::stage_costs_from_plan(plan, tiny_profile());
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("softmax") != std::string::npos);
    CHECK(std::string(e.what()).find("lacks") != std::string::npos);
  }
  plan = tiny_plan();
  plan.stages[1].end_layer = 6;
  CHECK_THROWS_AS(sim::stage_costs_from_plan(plan, tiny_profile()), InputError);
}

// A stage's sums are within the profile's limits; scaled to a micro-batch size far above the
// profile's they may not fit int64: refused, not wrapped into a negative cost.
TEST_CASE("stage costs: scaling a stage's sums past 2^63 is refused") {
  models::Profile p = tiny_profile();
  p.micro_batch = 1;
  p.layers[1].forward_ns = 1000000000000000;
  planner::Plan plan = tiny_plan();
  plan.micro_batch_size = int64_t{1} << 30;
  plan.batch = plan.micro_batch_size * plan.num_micro_batches;
  CHECK_THROWS_WITH_AS(sim::stage_costs_from_plan(plan, p), doctest::Contains("passes 2^63"), InputError);
  plan.micro_batch_size = 8000;  // 8e18 ns: just inside int64
  plan.batch = plan.micro_batch_size * plan.num_micro_batches;
  CHECK(sim::stage_costs_from_plan(plan, p).forward_ns[0] == 8000000000000000000);  // data loading excluded
}
