// exec/runtime/run_compare.h helpers. price_on_own_cores: each virtual stage's F/B/W and each
// device's optimizer step come from the profile of the co-run copy on that stage's device, on
// plain and interleaved schedules; nothing changes for one device, mismatched copies or
// replicas. in_context_pass_ns: one pass by a profile's base times.
#include <doctest/doctest.h>

#include <vector>

#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_pipeline.h"
#include "models/cost.h"
#include "models/zoo.h"
#include "sim/plan_costs.h"
#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;

namespace {

// The analytic profile with every layer's times set to `ns` (step: ns / 2).
models::Profile flat(const models::Model& m, int64_t ns) {
  models::Profile p = models::analytic_profile(m, models::find_device("cpu-core-avx2"), 1);
  for (auto& l : p.layers) {
    l.forward_ns = ns;
    if (l.backward_input_ns > 0) l.backward_input_ns = ns;
    if (l.backward_weight_ns > 0) l.backward_weight_ns = ns;
    l.step_ns = l.parameter_bytes > 0 ? ns / 2 : 0;
  }
  return p;
}

}  // namespace

TEST_CASE("price_on_own_cores: a stage's ops and a device's step from the copy on that device's cores") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const std::vector<models::Profile> copies{flat(m, 1000), flat(m, 3000)};
  for (int chunks : {1, 2}) {
    CAPTURE(chunks);
    const planner::Plan plan = even_plan(
        m, 2, 4, 1, chunks == 1 ? planner::ScheduleKind::one_f_one_b : planner::ScheduleKind::interleaved_1f1b, false,
        chunks);
    sim::StageCosts pooled = sim::stage_costs_from_plan(plan, flat(m, 2000));
    const planner::Schedule sched = sim::schedule_for_plan(plan, pooled);
    const sim::StageCosts c0 = sim::stage_costs_from_plan(plan, copies[0]);
    const sim::StageCosts c1 = sim::stage_costs_from_plan(plan, copies[1]);
    sim::StageCosts costs = pooled;
    REQUIRE(price_on_own_cores(costs, plan, sched, copies));
    for (int s = 0; s < sched.num_stages; ++s) {
      CAPTURE(s);
      const sim::StageCosts& want = sched.stage_device[s] == 0 ? c0 : c1;
      CHECK(sched.stage_device[s] == s % 2);
      CHECK(costs.forward_ns[s] == want.forward_ns[s]);
      CHECK(costs.backward_input_ns[s] == want.backward_input_ns[s]);
      CHECK(costs.backward_weight_ns[s] == want.backward_weight_ns[s]);
      CHECK(costs.forward_ns[s] != pooled.forward_ns[s]);  // the pooled price is gone
    }
    REQUIRE(costs.step_ns.size() == 2);
    CHECK(costs.step_ns[0] == c0.step_ns[0]);
    CHECK(costs.step_ns[1] == c1.step_ns[1]);
    CHECK(costs.activation_bytes == pooled.activation_bytes);  // bytes are not the copies' business
  }
  // Nothing to do: one copy for two devices, or one device.
  const planner::Plan two = even_plan(m, 2, 4, 1, planner::ScheduleKind::one_f_one_b, false);
  sim::StageCosts costs = sim::stage_costs_from_plan(two, flat(m, 2000));
  const sim::StageCosts before = costs;
  CHECK_FALSE(price_on_own_cores(costs, two, sim::schedule_for_plan(two, costs), {copies[0]}));
  CHECK(costs.forward_ns == before.forward_ns);
  const planner::Plan one = even_plan(m, 1, 4, 1, planner::ScheduleKind::one_f_one_b, false);
  sim::StageCosts single = sim::stage_costs_from_plan(one, flat(m, 2000));
  CHECK_FALSE(price_on_own_cores(single, one, sim::schedule_for_plan(one, single), {copies[0]}));
}

TEST_CASE("in_context_pass_ns: F, B, W and step of every layer, the input layer's F included") {
  const models::Model m = testing::tiny_model("mlp", 8);
  models::Profile p = flat(m, 1000);
  int64_t want = 0;
  for (const auto& l : p.layers) want += l.forward_ns + l.backward_input_ns + l.backward_weight_ns + l.step_ns;
  CHECK(in_context_pass_ns(p) == want);
  CHECK(want > 1000 * static_cast<int64_t>(p.layers.size()));  // more than the forwards alone
  p.layers[1].step_ns += 7;
  CHECK(in_context_pass_ns(p) == want + 7);
}
