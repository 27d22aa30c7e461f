// planner/interleave.h: the exact minimax split, the device-balancing refinement, and the
// interleaved plan's layout (virtual stage k on the base plan's device k mod p). Hand-checked.
#include "planner/interleave.h"

#include <doctest/doctest.h>

#include "models/error.h"
#include "planner/plan.h"

namespace pw::planner {
namespace {

models::Profile profile_of(const std::vector<int64_t>& forward) {
  models::Profile p;
  p.model = "chain";
  for (size_t i = 0; i < forward.size(); ++i) {
    models::LayerProfile l;
    l.name = "l" + std::to_string(i);
    l.kind = "linear";
    l.forward_ns = forward[i];
    l.backward_input_ns = forward[i];
    l.backward_weight_ns = 0;
    p.layers.push_back(l);
  }
  return p;
}

Plan base_plan(int p, int m) {
  Plan b;
  b.schedule = ScheduleKind::one_f_one_b;
  b.num_micro_batches = m;
  b.batch = m;
  for (int s = 0; s < p; ++s) {
    StagePlan st;
    st.devices = {10 + s};
    b.stages.push_back(st);
  }
  return b;
}

TEST_CASE("balanced cuts: the minimax contiguous split, earliest cuts on ties") {
  CHECK(balanced_cuts({1, 1, 1, 1}, 2) == std::vector<int>{0, 2, 4});
  // Max 5 is the best possible (the 5 alone). Both 5 | 1 1 1 1 1 | 4 and 5 | 1 1 1 1 | 1 4
  // reach it; the tie goes to the earlier start of the last part.
  CHECK(balanced_cuts({5, 1, 1, 1, 1, 1, 4}, 3) == std::vector<int>{0, 1, 5, 7});
  CHECK(balanced_cuts({3, 3, 3}, 3) == std::vector<int>{0, 1, 2, 3});
  CHECK(balanced_cuts({7}, 1) == std::vector<int>{0, 1});
  CHECK_THROWS_AS(balanced_cuts({1, 2}, 3), InputError);
  CHECK_THROWS_AS(balanced_cuts({1, 2}, 0), InputError);
  CHECK_THROWS_AS(balanced_cuts({1, -2}, 1), InputError);
}

TEST_CASE("device-balanced cuts: a heavy last layer no longer piles onto one device") {
  // 2 devices x 2 chunks over 1 1 1 1 1 1 4 (total 10). The minimax split into 4 parts has
  // largest part 4 (the heavy layer alone); among such splits the device loads (parts 0+2 and
  // 1+3) are best at 5 / 5: 1 1 1 | 1 | 1 1 | 4 gives device 0 = 3 + 2, device 1 = 1 + 4.
  const std::vector<int64_t> cost{1, 1, 1, 1, 1, 1, 4};
  const std::vector<int> cuts = device_balanced_cuts(cost, 2, 2);
  REQUIRE(cuts.size() == 5);
  int64_t dev[2] = {0, 0};
  for (int k = 0; k < 4; ++k)
    for (int i = cuts[k]; i < cuts[k + 1]; ++i) dev[k % 2] += cost[i];
  CHECK(dev[0] == 5);
  CHECK(dev[1] == 5);
  CHECK(cuts.front() == 0);
  CHECK(cuts.back() == 7);
}

TEST_CASE("interleave plan: p x v virtual stages, stage k on the base plan's device k mod p") {
  const models::Profile prof = profile_of({2, 2, 2, 2, 2, 2, 2, 2});
  const Plan il = interleave_plan(base_plan(2, 4), prof, 2);
  CHECK(il.schedule == ScheduleKind::interleaved_1f1b);
  CHECK(il.chunks == 2);
  REQUIRE(il.num_stages() == 4);
  for (int k = 0; k < 4; ++k) {
    CHECK(il.stages[k].first_layer == 2 * k);
    CHECK(il.stages[k].end_layer == 2 * k + 2);
    CHECK(il.stages[k].devices == std::vector<int>{10 + k % 2});
    CHECK(il.stages[k].layer_names ==
          std::vector<std::string>{"l" + std::to_string(2 * k), "l" + std::to_string(2 * k + 1)});
  }
  CHECK(il.num_micro_batches == 4);
}

TEST_CASE("interleave plan: what it refuses, and why") {
  const models::Profile prof = profile_of({1, 1, 1, 1, 1, 1});
  // The counts suggested are multiples of the devices that divide the batch (40: 4 and 8, not 6).
  Plan five = base_plan(2, 5);
  five.batch = 40;
  CHECK_THROWS_WITH_AS(
      interleave_plan(five, prof, 2),
      "interleaved-1f1b: 5 micro-batches are not a multiple of the 2 devices; try --micro-batches 4 or 8", InputError);
  CHECK_THROWS_WITH_AS(interleave_plan(base_plan(2, 5), prof, 2),
                       "interleaved-1f1b: 5 micro-batches are not a multiple of the 2 devices; no count that is a "
                       "multiple of 2 divides the batch of 5; try another --batch",
                       InputError);
  CHECK_THROWS_AS(interleave_plan(base_plan(2, 4), prof, 1), InputError);
  CHECK_THROWS_AS(interleave_plan(base_plan(1, 4), prof, 2), InputError);
  CHECK_THROWS_AS(interleave_plan(base_plan(2, 4), prof, 4), InputError);  // 6 layers < 8 virtual stages
  Plan rep = base_plan(2, 4);
  rep.stages[0].devices = {1, 2};
  CHECK_THROWS_AS(interleave_plan(rep, prof, 2), InputError);
}

TEST_CASE("plan reader: an interleaved plan whose chunks do not divide its stages is refused") {
  // Found by fuzzing: chunks larger than the stages made the device check divide by zero.
  const models::Profile prof = profile_of({2, 2, 2, 2, 2, 2, 2, 2});
  Plan il = interleave_plan(base_plan(2, 4), prof, 2);
  il.num_devices_used = 2;
  Json j;
  to_json(j, il);
  CHECK(plan_from_json(j).chunks == 2);
  for (int chunks : {3, 5, 1024}) {
    j["chunks"] = chunks;
    CHECK_THROWS_WITH_AS(
        plan_from_json(j),
        ("/chunks: " + std::to_string(chunks) + " chunks per device do not divide the plan's 4 stages").c_str(),
        InputError);
  }
}

}  // namespace
}  // namespace pw::planner
