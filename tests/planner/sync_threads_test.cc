// Fidelity dimensions of the sync planner (planner/planner.h): threads per stage and
// micro-batch size searched together on measured points, the extrapolation flag, and the
// analytic model's GEMM-size efficiency. Hand-made profiles with hand-computed optima.
#include <doctest/doctest.h>

#include "models/cluster.h"
#include "models/cost.h"
#include "models/device.h"
#include "models/error.h"
#include "models/zoo.h"
#include "planner/planner.h"

namespace pw::planner {
namespace {

using models::LayerProfile;
using models::Profile;
using models::ProfilePoint;

// input + 2 equal compute layers, measured at micro-batch 4 on 1 thread (F = B = 100 per layer),
// with points at sizes 1, 2 (1 thread: linear) and 1, 2, 4 on 2 threads (F = B = two4 at 4).
Profile two_layer(int64_t two1, int64_t two2, int64_t two4) {
  Profile p;
  p.model = "toy";
  p.source = "measured";
  p.device = {"cpu", 2, 1};
  p.micro_batch = 4;
  LayerProfile in;
  in.name = "in";
  in.kind = "input";
  in.is_data_loading = true;
  in.output_bytes = 64;
  p.layers.push_back(in);
  for (int i = 0; i < 2; ++i) {
    LayerProfile l;
    l.name = "fc" + std::to_string(i);
    l.kind = "linear";
    l.forward_ns = 100;
    l.backward_input_ns = 100;
    l.output_bytes = 64;
    l.stash_bytes = 64;
    l.parameter_bytes = 400;
    p.layers.push_back(l);
  }
  p.edges = {{0, 1}, {1, 2}};
  auto point = [](int64_t b, int k, int64_t t) {
    ProfilePoint pt;
    pt.micro_batch = b;
    pt.threads = k;
    pt.layers = {{0, 0, 0, 0}, {t, t, 0, 0}, {t, t, 0, 0}};
    return pt;
  };
  p.points = {point(1, 1, 25), point(2, 1, 50), point(1, 2, two1), point(2, 2, two2), point(4, 2, two4)};
  return p;
}

models::Cluster two_cores() {
  models::DeviceSpec d;
  d.name = "cpu";
  d.memory_bytes = int64_t{1} << 30;
  return models::make_flat_cluster(d, 2, 1e15);
}

PlanRequest request() {
  PlanRequest r;
  r.batch = 4;
  r.schedule = pw::planner::ScheduleKind::gpipe;
  r.optimizer = "sgd";
  return r;
}

TEST_CASE("threads per stage: good 2-thread scaling picks 1 stage on both cores") {
  // 1 stage x 2 threads, m = 1: 2 layers x (60 + 60) = 240 ns. The best alternatives:
  // 2 stages x 1 thread, m = 4 (b = 1): 2 x 50 + 3 x 50 = 250; m = 2: 200 + 100 = 300;
  // 1 stage x 2 threads, m = 2: 2 x 160 = 320.
  const PlanOutcome o = make_plan(two_layer(30, 40, 60), two_cores(), request());
  REQUIRE(o.feasible);
  CHECK(o.plan.threads_per_stage == 2);
  CHECK(o.plan.num_stages() == 1);
  CHECK(o.plan.num_micro_batches == 1);
  CHECK(o.plan.num_devices_used == 2);
  CHECK(o.plan.stages[0].devices == std::vector<int>{0});
  CHECK(o.plan.predicted.iteration_time_s == doctest::Approx(240e-9));
  CHECK_FALSE(o.plan.extrapolated);
}

TEST_CASE("threads per stage: poor 2-thread scaling picks 2 stages of 1 core, 4 micro-batches") {
  // 1 stage x 2 threads at best 2 x (90 + 90) = 360 ns; 2 stages x 1 thread, m = 4: 250 ns.
  const PlanOutcome o = make_plan(two_layer(45, 70, 90), two_cores(), request());
  REQUIRE(o.feasible);
  CHECK(o.plan.threads_per_stage == 1);
  CHECK(o.plan.num_stages() == 2);
  CHECK(o.plan.num_micro_batches == 4);
  CHECK(o.plan.micro_batch_size == 1);
  CHECK(o.plan.stages[0].devices == std::vector<int>{1});
  CHECK(o.plan.stages[1].devices == std::vector<int>{0});
  CHECK(o.plan.predicted.iteration_time_s == doctest::Approx(250e-9));
}

TEST_CASE("threads per stage: every (k, m) priced is a candidate, fastest first, and a fixed k plans that k") {
  // As above (30, 40, 60): 1 stage x 2 threads m = 1: 240 ns; 2 stages x 1 thread m = 4: 250;
  // m = 2: 300; 1 stage x 2 threads m = 2: 320; m = 1 on 1 thread: 400; 2 threads m = 4: 480.
  const PlanOutcome o = make_plan(two_layer(30, 40, 60), two_cores(), request());
  REQUIRE(o.feasible);
  REQUIRE(o.candidates.size() == 6);
  const std::vector<std::pair<int, int>> order{{2, 1}, {1, 4}, {1, 2}, {2, 2}, {1, 1}, {2, 4}};
  const std::vector<double> ns{240, 250, 300, 320, 400, 480};
  for (size_t i = 0; i < order.size(); ++i) {
    CAPTURE(i);
    CHECK(o.candidates[i].threads_per_stage == order[i].first);
    CHECK(o.candidates[i].micro_batches == order[i].second);
    CHECK(o.candidates[i].predicted_s == doctest::Approx(ns[i] * 1e-9));
  }
  CHECK(o.candidates[0].stages == 1);
  CHECK(o.candidates[1].stages == 2);

  PlanRequest one = request();
  one.threads_per_stage = 1;  // the runner-up's plan
  const PlanOutcome q = make_plan(two_layer(30, 40, 60), two_cores(), one);
  REQUIRE(q.feasible);
  CHECK(q.plan.threads_per_stage == 1);
  CHECK(q.plan.num_stages() == 2);
  CHECK(q.plan.num_micro_batches == 4);
  CHECK(q.plan.predicted.iteration_time_s == doctest::Approx(250e-9));
  for (const PlanCandidate& c : q.candidates) CHECK(c.threads_per_stage == 1);
  one.micro_batches = 2;
  CHECK(make_plan(two_layer(30, 40, 60), two_cores(), one).plan.predicted.iteration_time_s == doctest::Approx(300e-9));

  PlanRequest three = request();
  three.threads_per_stage = 3;  // neither measured nor a stage on all of this cluster's cores
  CHECK_THROWS_AS(make_plan(two_layer(30, 40, 60), two_cores(), three), InputError);
  three.threads_per_stage = -1;
  CHECK_THROWS_AS(make_plan(two_layer(30, 40, 60), two_cores(), three), InputError);
}

TEST_CASE("threads per stage: the plan says when its costs were extrapolated") {
  PlanRequest r = request();
  r.batch = 16;
  r.micro_batches = 2;  // micro-batches of 8: beyond the measured sizes (at most 4)
  const PlanOutcome o = make_plan(two_layer(30, 40, 60), two_cores(), r);
  REQUIRE(o.feasible);
  CHECK(o.plan.extrapolated);
  CHECK(o.plan.extrapolation_note.find("micro-batch 8 outside the measured sizes") != std::string::npos);
  CHECK(format_plan_table(o.plan).find("warning: costs extrapolated") != std::string::npos);
  const Plan back = plan_from_json(Json(o.plan));
  CHECK(back.extrapolated);
  CHECK(back.threads_per_stage == o.plan.threads_per_stage);
}

TEST_CASE("the optimizer step is in the predicted iteration") {
  Profile p = two_layer(45, 70, 90);
  p.points.clear();
  p.layers[1].step_ns = 30;
  p.layers[2].step_ns = 50;
  PlanRequest r = request();
  r.micro_batches = 1;
  const PlanOutcome o = make_plan(p, models::make_flat_cluster(two_cores().device(), 1, 1e15), r);
  REQUIRE(o.feasible);
  CHECK(o.plan.predicted_step_ns == 80);
  CHECK(o.plan.predicted.iteration_time_s == doctest::Approx(480e-9));  // 400 compute + 80 step
}

TEST_CASE("analytic CPU model: efficiency falls with GEMM size, so no micro-batches of 1") {
  models::ZooOptions z;
  z.depth = 8;
  z.width = 256;
  z.batch = 64;
  const models::Model m = models::build_zoo_model("mlp", z);
  const models::DeviceSpec dev = models::find_device("cpu-core-avx2");
  models::CostOptions co;
  co.gemm_half_rows = models::default_gemm_half_rows(dev);
  CHECK(co.gemm_half_rows == 16);
  std::vector<int64_t> sizes{1, 2, 4, 8, 16, 32, 64};
  const Profile p = models::analytic_profile_with_points(m, dev, 1, sizes, co);
  CHECK(p.points.size() == 6);
  PlanRequest r;
  r.batch = 64;
  const PlanOutcome o = make_plan(p, models::make_flat_cluster(dev, 2, 1e10), r);
  REQUIRE(o.feasible);
  CHECK(o.plan.micro_batch_size > 1);
  CHECK(o.plan.num_micro_batches < 64);
  CHECK_FALSE(o.plan.extrapolated);
  // A layer of 1 row runs at 1/17 of a 256-row one's rate per row.
  CHECK(models::gemm_efficiency(2.0 * 1 * 100, 100, 16) == doctest::Approx(1.0 / 17));
}

}  // namespace
}  // namespace pw::planner
