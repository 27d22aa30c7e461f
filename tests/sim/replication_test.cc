// Replicated stages in the simulator (sim/engine.h): replicas as devices taking micro-batches in
// turn, transfers between the replicas that own a micro-batch, the all-reduce on the ring's
// links (a barrier at the flush for sync schedules, per replica after each backward for async);
// and PipeDream's vgg16 3-1 plan and a replicated sync plan against their predictions.
#include <doctest/doctest.h>

#include <string>

#include "models/cluster.h"
#include "models/pipedream_import.h"
#include "planner/planner.h"
#include "planner/replicated_sync.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_replicas.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"

using namespace pw;
using planner::ScheduleKind;

namespace {

// `iterations` simulated, with or without the trace (the rest of SimOptions as default).
sim::SimOptions sim_options(int iterations, bool record_trace) {
  sim::SimOptions o;
  o.iterations = iterations;
  o.record_trace = record_trace;
  return o;
}

const std::string kVgg = std::string(PW_PIPEDREAM_DIR) + "/vgg16/graph.txt";

models::Cluster flat(int n, double bandwidth) {
  models::DeviceSpec dev;
  dev.name = "generic";
  dev.memory_bytes = int64_t{16} << 30;
  return models::Cluster("levels-" + std::to_string(n), dev, {{"level0", n, bandwidth, 0}});
}

}  // namespace

TEST_CASE("replicated 1f1b, stage 0 on two replicas: exact makespan 23, barrier all-reduce at the flush") {
  // Stage 0 (replicas = devices 0, 1; micro-batches 0, 2 and 1, 3): F = 2, BW = 4, all-reduce 3.
  // Stage 1 (device 2): F = 1, BW = 2. Every transfer costs 1 (Network::fixed). m = 4.
  // By hand (replica lists F F BW BW allreduce step, warm-up ceil(3/2) - 1 = 1):
  //   dev0 F0 [0,2] F2 [2,4]; dev1 F1 [0,2] F3 [2,4]; dev2 F0 [3,4] BW0 [4,6] F1 [6,7] BW1 [7,9]
  //   F2 [9,10] BW2 [10,12] F3 [12,13] BW3 [13,15]; gradients arrive at 7, 10, 13, 16:
  //   dev0 BW0 [7,11] BW2 [13,17]; dev1 BW1 [10,14] BW3 [16,20]; the all-reduce waits for
  //   dev1 (20) and runs [20,23]; steps at 23.
  const planner::Schedule s = planner::make_replicated_schedule(ScheduleKind::one_f_one_b, {2, 1}, 4, {true, false});
  sim::StageCosts c = sim::StageCosts::uniform(2, 0, 0, 0);
  c.forward_ns = {2, 1};
  c.backward_input_ns = {4, 2};
  c.allreduce_ns = {3, 0};
  c.weights_optimizer_bytes = {1000, 500};
  c.stash_bytes_per_micro_batch = {10, 20};
  const sim::SimResult r = sim::simulate(s, c, sim::Network::fixed(1), sim_options(1, true));
  CHECK(r.report.makespan_ns == 23);
  CHECK(r.report.num_devices == 3);
  CHECK(r.report.stage_replicas == std::vector<int>{2, 1});
  CHECK(r.report.devices[0].busy_ns == 2 + 2 + 4 + 4 + 3);
  CHECK(r.report.devices[1].busy_ns == 15);
  CHECK(r.report.devices[1].first_start_ns == 0);
  CHECK(r.report.devices[2].busy_ns == 12);
  CHECK(r.report.devices[2].last_end_ns == 15);
  // Each replica holds the weights and its own in-flight micro-batches (2), stage 1 one.
  CHECK(r.report.devices[0].peak_memory_bytes == 1000 + 2 * 10);
  CHECK(r.report.devices[1].max_in_flight == 2);
  CHECK(r.report.devices[2].peak_memory_bytes == 500 + 20);
  int allreduces = 0;
  for (const auto& e : r.trace.events)
    if (e.kind == planner::OpKind::allreduce) {
      ++allreduces;
      CHECK(e.start_ns == 20);
      CHECK(e.end_ns == 23);
    }
  CHECK(allreduces == 2);
  // Transfers go between the replica owning the micro-batch and stage 1's device.
  for (const auto& e : r.trace.events)
    if (e.is_transfer && e.kind == planner::OpKind::F) CHECK(e.device == e.micro_batch % 2);
}

TEST_CASE("replicated pipedream-async: each replica all-reduces after its backward, the ring's links queue") {
  // One stage on two replicas, F = 1, BW = 2, all-reduce 5, no warm-up (ceil(2/2) - 1 = 0).
  // Both backwards end at 3; replica 0's all-reduce holds the ring links 0->1 and 1->0 for
  // [3,8], so replica 1's runs [8,13] (no barrier: replica 0 does not wait for replica 1).
  const planner::Schedule s = planner::make_replicated_schedule(ScheduleKind::pipedream_async, {2}, 2, {true});
  sim::StageCosts c = sim::StageCosts::uniform(1, 1, 2, 0);
  c.allreduce_ns = {5};
  const sim::SimResult r = sim::simulate(s, c, sim::Network{}, sim_options(1, false));
  CHECK(r.report.devices[0].last_end_ns == 8);
  CHECK(r.report.devices[1].last_end_ns == 13);
  CHECK(r.report.devices[1].busy_ns == 8);
  CHECK(r.report.makespan_ns == 13);
}

TEST_CASE("PipeDream's vgg16 3-1 plan simulates within 2% of the planner's throughput") {
  // As `plan --profile vgg16/graph.txt --objective pipedream --levels 4 --bandwidths 1.25e9
  // --activation-comm` (_reference_runs/vgg16_n4: 725.8 samples/s).
  const models::Profile profile = models::import_pipedream_graph(kVgg);
  const models::Cluster cluster = flat(4, 1.25e9);
  planner::PlanRequest req;
  req.objective = pw::planner::Objective::pipedream;
  req.activation_comm = true;
  const planner::PlanOutcome out = planner::make_plan(profile, cluster, req);
  REQUIRE(out.feasible);
  const planner::Plan& plan = out.plan;
  REQUIRE(plan.num_stages() == 2);
  REQUIRE(plan.stages[0].replicas() == 3);
  REQUIRE(plan.stages[1].replicas() == 1);
  const sim::StageCosts costs = sim::stage_costs_from_plan(plan, profile, &cluster);
  const planner::Schedule s = sim::schedule_for_plan(plan, costs);
  CHECK(s.num_devices == 4);
  CHECK(s.num_micro_batches == 6);  // the round-robin period covering the warm-up
  sim::SimOptions o;
  o.iterations = 100;
  o.schedule_bubble = true;
  const sim::Report r = sim::simulate(s, costs, sim::network_for_plan(plan, &cluster), o).report;
  CHECK(r.stage_replicas == std::vector<int>{3, 1});
  const double planned = plan.predicted.throughput_samples_per_s;
  CHECK(planned == doctest::Approx(725.833).epsilon(1e-5));
  CHECK(r.throughput_samples_per_s == doctest::Approx(planned).epsilon(0.02));
  // The replicas' steady state: each does F + BW + its all-reduce per micro-batch it owns.
  const double cycle_ns =
      costs.forward_ns[0] + costs.backward_input_ns[0] + costs.backward_weight_ns[0] + costs.allreduce_ns[0];
  CHECK(r.throughput_samples_per_s == doctest::Approx(128 * 3 * 1e9 / cycle_ns).epsilon(0.005));
  CHECK(r.schedule_bubble < 0.01);  // no flush
  // One device doing all three replicas' work (the collapsed model) is far slower.
  CHECK(r.throughput_samples_per_s > 3.5 * 190);
}

TEST_CASE("a replicated synchronous plan simulates within 2% of its planned iteration") {
  // vgg16 planned for sync 1f1b on two devices; its heavier stage then gets a second replica
  // on a third device and the plan is re-predicted (planner/replicated_sync.h).
  const models::Profile profile = models::import_pipedream_graph(kVgg);
  const models::Cluster two = flat(2, 1.25e10), three = flat(3, 1.25e10);
  planner::PlanRequest req;
  req.micro_batches = 32;
  req.memory_limit_bytes = int64_t{64} << 30;
  planner::PlanOutcome out = planner::make_plan(profile, two, req);
  REQUIRE(out.feasible);
  planner::Plan plan = out.plan;
  REQUIRE(plan.num_stages() == 2);
  const auto t = [&](int s) { return plan.stages[s].predicted.forward_ns + plan.stages[s].predicted.backward_ns; };
  const int heavy = t(0) >= t(1) ? 0 : 1;
  plan.stages[heavy].devices.push_back(2);
  const double before = plan.predicted.iteration_time_s;
  planner::predict_replicated_sync(plan, profile, three);
  CHECK(plan.stages[heavy].predicted.allreduce_ns > 0);
  CHECK(plan.predicted.iteration_time_s < before);
  const sim::StageCosts costs = sim::stage_costs_from_plan(plan, profile, &three);
  const planner::Schedule s = sim::schedule_for_plan(plan, costs);
  CHECK(s.num_devices == 3);
  const sim::Report r = sim::simulate(s, costs, sim::network_for_plan(plan, &three)).report;
  MESSAGE("planned ", plan.predicted.iteration_time_s, " s, simulated ", r.iteration_ns * 1e-9, " s");
  CHECK(r.iteration_ns * 1e-9 == doctest::Approx(plan.predicted.iteration_time_s).epsilon(0.02));
}

TEST_CASE("replicated schedules: every shape runs, each replica is busy exactly for what it owns") {
  const std::vector<std::vector<int>> shapes = {{2}, {3, 1}, {1, 3}, {2, 2}, {3, 1, 2}, {1, 2, 1, 4}};
  for (ScheduleKind k :
       {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::pipedream_async, ScheduleKind::two_bw})
    for (const auto& reps : shapes)
      for (int m : {1, 5, 12}) {
        const int mm = planner::is_synchronous(k) ? m : planner::round_robin_micro_batches(m, reps);
        CAPTURE(to_string(k));
        CAPTURE(mm);
        const int S = static_cast<int>(reps.size());
        const planner::Schedule s = planner::make_replicated_schedule(k, reps, mm, std::vector<bool>(S, true));
        sim::StageCosts c = sim::StageCosts::uniform(S, 0, 0, 0);
        c.allreduce_ns.assign(S, 0);
        for (int st = 0; st < S; ++st) {
          c.forward_ns[st] = 3 + 2 * st;
          c.backward_input_ns[st] = 7 + st;
          c.allreduce_ns[st] = reps[st] > 1 ? 11 : 0;
        }
        const int K = 3;
        const sim::Report r = sim::simulate(s, c, sim::Network::fixed(2), sim_options(K, false)).report;
        REQUIRE(r.num_devices == static_cast<int>(s.device_ops.size()));
        for (int st = 0; st < S; ++st)
          for (int i = 0; i < reps[st]; ++i) {
            const int owned = (mm - i + reps[st] - 1) / reps[st];
            const int64_t ar = reps[st] > 1 ? (planner::is_synchronous(k) ? 1 : owned) * 11 : 0;
            const int64_t want = K * (owned * (c.forward_ns[st] + c.backward_input_ns[st]) + ar);
            CHECK(r.devices[s.stage_replicas[st][i]].busy_ns == want);
          }
      }
}
