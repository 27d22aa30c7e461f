// sim::plan_with_prediction: the plan's headline prediction is one simulation of the plan, for
// the schedules the DP has a closed form for and the two it has not; a chooser's plan is the one
// predicted; requests that make no sense are refused in one line.
#include "sim/plan_prediction.h"

#include <doctest/doctest.h>

#include <string>

#include "models/cost.h"
#include "models/device.h"
#include "models/error.h"
#include "models/pipedream_import.h"
#include "models/zoo.h"
#include "planner/schedule.h"

using namespace pw;
using planner::ScheduleKind;

namespace {

struct Setup {
  models::Profile profile;
  models::Cluster cluster;
};

Setup gpt_on_a100s(int devices) {
  models::ZooOptions o;
  o.layers = 8;
  o.d_model = 512;
  o.heads = 8;
  o.seq = 256;
  o.vocab = 8000;
  o.batch = 16;
  const models::Model m = models::build_zoo_model("gpt", o);
  const models::DeviceSpec dev = models::find_device("a100-80g");
  return {models::analytic_profile(m, dev, 1), models::make_flat_cluster(dev, devices, 100e9, 5000)};
}

planner::PlanRequest request(const std::string& schedule) {
  planner::PlanRequest r;
  r.batch = 16;
  r.schedule = pw::planner::parse_schedule_request(schedule, "schedule");
  return r;
}

}  // namespace

TEST_CASE("plan_with_prediction: the prediction is the simulation of the plan, every sync schedule") {
  const Setup s = gpt_on_a100s(4);
  for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b"}) {
    CAPTURE(name);
    const planner::PlanOutcome out = sim::plan_with_prediction(s.profile, s.cluster, request(name));
    REQUIRE(out.feasible);
    CHECK(planner::to_string(out.plan.schedule) == std::string(name));
    sim::SimOptions so;
    so.schedule_bubble = true;
    const sim::Report r = sim::simulate_plan(out.plan, s.profile, &s.cluster, so).report;
    CHECK(out.plan.predicted.iteration_time_s == static_cast<double>(r.iteration_ns) * 1e-9);
    CHECK(out.plan.predicted.peak_memory_bytes == r.peak_memory_bytes);
    CHECK(out.plan.predicted.schedule_bubble == r.schedule_bubble);
    CHECK(out.plan.predicted.throughput_samples_per_s == doctest::Approx(16 / (r.iteration_ns * 1e-9)));
  }
  // zb-h2 runs on zb-h1's partition; interleaved-1f1b on 1f1b's devices, re-cut into 2 x p.
  const planner::Plan h1 = sim::plan_with_prediction(s.profile, s.cluster, request("zb-h1")).plan;
  const planner::Plan h2 = sim::plan_with_prediction(s.profile, s.cluster, request("zb-h2")).plan;
  REQUIRE(h1.num_stages() == h2.num_stages());
  for (int k = 0; k < h1.num_stages(); ++k) CHECK(h1.stages[k].end_layer == h2.stages[k].end_layer);
  const planner::Plan one = sim::plan_with_prediction(s.profile, s.cluster, request("1f1b")).plan;
  planner::PlanRequest three = request("interleaved-1f1b");
  three.chunks = 3;
  const planner::Plan v3 = sim::plan_with_prediction(s.profile, s.cluster, three).plan;
  CHECK(v3.chunks == 3);
  CHECK(v3.num_stages() == 3 * one.num_stages());
}

TEST_CASE("plan_with_prediction: simulate = false keeps the closed form, and a chooser's plan is the one predicted") {
  const Setup s = gpt_on_a100s(4);
  planner::PlanRequest req = request("1f1b");
  const planner::PlanOutcome closed = planner::make_plan(s.profile, s.cluster, req);
  sim::PlanningOptions keep;
  keep.simulate = false;
  const planner::PlanOutcome kept = sim::plan_with_prediction(s.profile, s.cluster, req, keep);
  CHECK(kept.plan.predicted.iteration_time_s == closed.plan.predicted.iteration_time_s);
  // A chooser that takes the plan with one stage fewer (made here by hand: all layers on one stage).
  int calls = 0;
  sim::PlanningOptions pick;
  pick.choose = [&](const planner::PlanOutcome& out) {
    ++calls;
    planner::PlanRequest one = req;
    planner::PlanOutcome o =
        planner::make_plan(s.profile, models::make_flat_cluster(s.cluster.device(), 1, 100e9, 5000), one);
    CHECK(out.feasible);
    return o.plan;
  };
  const planner::PlanOutcome chosen = sim::plan_with_prediction(s.profile, s.cluster, req, pick);
  CHECK(calls == 1);
  CHECK(chosen.plan.num_stages() == 1);
  const sim::Report r = sim::simulate_plan(chosen.plan, s.profile, &s.cluster, {}).report;
  CHECK(chosen.plan.predicted.iteration_time_s == static_cast<double>(r.iteration_ns) * 1e-9);
}

TEST_CASE("plan_with_prediction: zb-h2 over the memory limit is infeasible with its simulated peak") {
  const Setup s = gpt_on_a100s(4);
  const planner::Plan h2 = sim::plan_with_prediction(s.profile, s.cluster, request("zb-h2")).plan;
  const planner::Plan h1 = sim::plan_with_prediction(s.profile, s.cluster, request("zb-h1")).plan;
  REQUIRE(h2.predicted.peak_memory_bytes > h1.predicted.peak_memory_bytes);
  // A limit between the two: zb-h1 fits, zb-h2 on its partition does not.
  planner::PlanRequest req = request("zb-h2");
  req.memory_limit_bytes = (h1.predicted.peak_memory_bytes + h2.predicted.peak_memory_bytes) / 2;
  planner::PlanRequest h1req = request("zb-h1");
  h1req.memory_limit_bytes = req.memory_limit_bytes;
  // The limit does not bind zb-h1, so its DP keeps the same partition, on which zb-h2 needs more.
  const planner::PlanOutcome fits = sim::plan_with_prediction(s.profile, s.cluster, h1req);
  REQUIRE(fits.feasible);
  REQUIRE(fits.plan.num_stages() == h1.num_stages());
  for (int k = 0; k < h1.num_stages(); ++k) CHECK(fits.plan.stages[k].end_layer == h1.stages[k].end_layer);
  const planner::PlanOutcome out = sim::plan_with_prediction(s.profile, s.cluster, req);
  CHECK_FALSE(out.feasible);
  CHECK(out.max_batch_that_fits == -1);
  CHECK(out.min_memory_bytes_to_fit == h2.predicted.peak_memory_bytes);
  CHECK(out.reason.find("zb-h2 on the zb-h1 partition needs") == 0);
}

TEST_CASE("plan_with_prediction: requests that make no sense are refused in one line") {
  const Setup s = gpt_on_a100s(2);
  planner::PlanRequest chunks = request("1f1b");
  chunks.chunks = 3;
  CHECK_THROWS_WITH_AS(sim::plan_with_prediction(s.profile, s.cluster, chunks),
                       "--chunks: only with --schedule interleaved-1f1b", InputError);
  CHECK_THROWS_AS(planner::make_plan(s.profile, s.cluster, chunks), InputError);
  planner::PlanRequest one_chunk = request("interleaved-1f1b");
  one_chunk.chunks = 1;
  CHECK_THROWS_WITH_AS(sim::plan_with_prediction(s.profile, s.cluster, one_chunk),
                       "--chunks: interleaved-1f1b needs at least 2 chunks per device, got 1", InputError);
  planner::PlanRequest async = request("zb-h2");
  async.objective = planner::Objective::async;
  CHECK_THROWS_WITH_AS(sim::plan_with_prediction(s.profile, s.cluster, async),
                       "--schedule zb-h2: planned by the sync objective only, got --objective async", InputError);
}

TEST_CASE(
    "plan_with_prediction: a PipeDream plan records what simulate --plan reproduces, the objective's bottleneck beside "
    "it") {
  // `plan --profile vgg16/graph.txt --objective pipedream --levels 4 --activation-comm` (1e9 B/s,
  // the --levels default): PipeDream's optimizer charges the link for the activations and the
  // gradients together (622.8 samples/s); the simulator's full-duplex links pass them at once
  // (734.7). The plan now says the simulated figure, and keeps the objective's in the bottleneck.
  const models::Profile profile = models::import_pipedream_graph(std::string(PW_PIPEDREAM_DIR) + "/vgg16/graph.txt");
  models::DeviceSpec dev;
  dev.name = "generic";
  dev.memory_bytes = int64_t{16} << 30;
  const models::Cluster cluster("levels-4", dev, {{"level0", 4, 1e9, 0}});
  planner::PlanRequest req;
  req.objective = pw::planner::Objective::pipedream;
  req.activation_comm = true;
  const planner::PlanOutcome objective = planner::make_plan(profile, cluster, req);  // PipeDream's own figures
  REQUIRE(objective.feasible);
  const planner::PlanOutcome out = sim::plan_with_prediction(profile, cluster, req);
  REQUIRE(out.feasible);
  const planner::Plan& plan = out.plan;
  CHECK(plan.predicted.bottleneck_time_s == objective.plan.predicted.bottleneck_time_s);
  CHECK(objective.plan.predicted.throughput_samples_per_s == doctest::Approx(622.8).epsilon(1e-3));
  // simulate --plan: the plan's schedule, kAsyncPlanIterations back to back.
  sim::SimOptions so;
  so.iterations = sim::kAsyncPlanIterations;
  const sim::Report r = sim::simulate_plan(plan, profile, &cluster, so).report;
  MESSAGE("objective ", objective.plan.predicted.throughput_samples_per_s, " samples/s, recorded ",
          plan.predicted.throughput_samples_per_s, ", simulated ", r.throughput_samples_per_s);
  CHECK(r.throughput_samples_per_s == doctest::Approx(734.7).epsilon(1e-3));
  CHECK(plan.predicted.throughput_samples_per_s == doctest::Approx(r.throughput_samples_per_s).epsilon(1e-9));
  CHECK(plan.predicted.iteration_time_s == doctest::Approx(plan.batch / r.throughput_samples_per_s).epsilon(1e-9));
  // simulate = false keeps the objective's figures (what-if studies).
  sim::PlanningOptions keep;
  keep.simulate = false;
  CHECK(sim::plan_with_prediction(profile, cluster, req, keep).plan.predicted.throughput_samples_per_s ==
        objective.plan.predicted.throughput_samples_per_s);
}
