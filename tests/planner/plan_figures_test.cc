// Figures that rank plans (planner/plan_figures.h), the ring all-reduce and the replicated sync
// prediction (planner/replicated_sync.h), and the plan table's communication column.
#include <doctest/doctest.h>

#include <string>

#include "models/cluster.h"
#include "models/cost.h"
#include "models/device.h"
#include "models/pipedream_import.h"
#include "models/zoo.h"
#include "planner/plan_figures.h"
#include "planner/planner.h"
#include "planner/replicated_sync.h"

using namespace pw::planner;

namespace {

StagePlan stage(int first, int end, std::vector<int> devices, int64_t f, int64_t b) {
  StagePlan s;
  s.first_layer = first;
  s.end_layer = end;
  s.devices = std::move(devices);
  s.predicted.forward_ns = f;
  s.predicted.backward_ns = b;
  return s;
}

// The 48 x 2048 GPT on 8 A100s, batch 256, as `plan --model gpt --layers 48
// --d-model 2048 --heads 16 --device a100-80g --devices 8 --batch 256` builds it.
PlanOutcome gpt_plan(const std::string& partitioner) {
  pw::models::ZooOptions zo;
  zo.layers = 48;
  zo.d_model = 2048;
  zo.heads = 16;
  zo.batch = 256;
  const auto model = pw::models::build_zoo_model("gpt", zo);
  const auto& dev = pw::models::find_device("a100-80g");
  const auto profile = pw::models::analytic_profile(model, dev, 1, {0.5, false, "adam"});
  const auto cluster = pw::models::make_flat_cluster(dev, 8, 1.25e9);
  PlanRequest req;
  req.batch = 256;
  req.partitioner = pw::planner::parse_partitioner(partitioner, "partitioner");
  return make_plan(profile, cluster, req);
}

}  // namespace

TEST_CASE("plan figures: hand-checkable unequal stages") {
  // Two stages, m = 4: t_0 = 1 + 2 = 3 ms, t_1 = 1 ms; fill-drain iteration 3 + 1 + 3 * 3 = 13 ms.
  Plan p;
  p.schedule = ScheduleKind::one_f_one_b;
  p.num_micro_batches = 4;
  p.stages = {stage(0, 1, {1}, 1000000, 2000000), stage(1, 2, {0}, 500000, 500000)};
  p.predicted.iteration_time_s = 13e-3;
  set_plan_figures(p);
  // busy 12 ms and 4 ms: mean 8, max 12.
  CHECK(p.predicted.stage_imbalance == doctest::Approx(1.0 - 8.0 / 12.0).epsilon(1e-12));
  CHECK(p.predicted.idle_share == doctest::Approx(1.0 - 8.0 / 13.0).epsilon(1e-12));
  CHECK(p.predicted.schedule_bubble == doctest::Approx(1.0 / 5.0).epsilon(1e-12));  // (p-1)/(m+p-1)
  // Stage 0 on two replicas: each does 2 micro-batches (6 ms) plus its all-reduce of 1 ms; the
  // equal-work bubble counts devices: (3 - 1) / (4 + 3 - 1).
  p.stages[0].devices = {1, 2};
  p.stages[0].predicted.allreduce_ns = 1000000;
  p.predicted.iteration_time_s = 10e-3;
  set_plan_figures(p);
  const double mean = (7.0 + 7.0 + 4.0) / 3;
  CHECK(p.predicted.stage_imbalance == doctest::Approx(1.0 - mean / 7.0).epsilon(1e-12));
  CHECK(p.predicted.idle_share == doctest::Approx(1.0 - mean / 10.0).epsilon(1e-12));
  CHECK(p.predicted.schedule_bubble == doctest::Approx(2.0 / 6.0).epsilon(1e-12));
  // Asynchronous: no flush, no schedule bubble.
  p.schedule = ScheduleKind::pipedream_async;
  set_plan_figures(p);
  CHECK(p.predicted.schedule_bubble == 0);
}

TEST_CASE("plan figures: the 48x2048 GPT, even partition: schedule bubble (p-1)/(m+p-1), imbalance apart") {
  for (const char* part : {"even", "dp", "gpipe-greedy"}) {
    CAPTURE(part);
    const PlanOutcome out = gpt_plan(part);
    REQUIRE(out.feasible);
    const Plan& p = out.plan;
    const double p1 = p.num_stages() - 1.0;
    CHECK(p.num_stages() == 8);
    CHECK(p.num_micro_batches == 256);
    const double closed = p1 / (p.num_micro_batches + p1);
    CHECK(closed == doctest::Approx(7.0 / 263));
    CHECK(std::abs(p.predicted.schedule_bubble - closed) < 0.01);
    // The imbalance is its own figure: the even split of 53 profile layers leaves stages unequal.
    CHECK(p.predicted.stage_imbalance > 0.01);
    CHECK(p.predicted.idle_share >= p.predicted.schedule_bubble);
    CHECK(p.predicted.idle_share < 1);
    // Every stage but the last sends, so every stage shows communication time.
    for (const auto& st : p.stages) CHECK(st.predicted.comm_ns > 0);
  }
  const Plan even = gpt_plan("even").plan;
  const std::string table = format_plan_table(even);
  CHECK(table.find("schedule bubble 2.66%") != std::string::npos);
  CHECK(table.find("comm ms") != std::string::npos);
  const pw::Json j = even;
  CHECK(j["predicted"]["schedule_bubble"].get<double>() == even.predicted.schedule_bubble);
  const Plan back = plan_from_json(j);
  CHECK(back.predicted.stage_imbalance == even.predicted.stage_imbalance);
  CHECK(back.predicted.idle_share == even.predicted.idle_share);
  // A plan written before the figures existed still loads (the fields are optional).
  pw::Json old = j;
  old["predicted"].erase("schedule_bubble");
  old["predicted"].erase("stage_imbalance");
  old["predicted"].erase("idle_share");
  CHECK(plan_from_json(old).predicted.schedule_bubble == 0);
}

TEST_CASE("plan table: a PipeDream plan shows its stages' communication (the bottleneck of stage 1)") {
  const auto profile = pw::models::import_pipedream_graph(std::string(PW_PIPEDREAM_DIR) + "/vgg16/graph.txt");
  pw::models::DeviceSpec dev;
  dev.name = "generic";
  dev.memory_bytes = int64_t{16} << 30;
  const pw::models::Cluster c("levels-4", dev, {{"level0", 4, 1.25e9, 0}});
  PlanRequest req;
  req.objective = pw::planner::Objective::pipedream;
  req.activation_comm = true;
  const PlanOutcome out = make_plan(profile, c, req);
  REQUIRE(out.feasible);
  const Plan& p = out.plan;
  REQUIRE(p.num_stages() == 2);
  CHECK(p.stages[0].replicas() == 3);
  // PipeDream's log: stage 1's "Pipeline-parallel communication time = 0.164417" = 2 x out / B
  // for both directions; ours is one direction of the single cut: 0.0822085 s.
  CHECK(p.stages[0].predicted.comm_ns == p.stages[1].predicted.comm_ns);
  CHECK(p.stages[1].predicted.comm_ns * 2e-9 == doctest::Approx(0.164417).epsilon(1e-5));
  CHECK(p.stages[0].predicted.allreduce_ns == ring_allreduce(c, p.stages[0].devices, 6941952).total());
  CHECK(format_plan_table(p).find("82.208") != std::string::npos);
}

TEST_CASE("ring all-reduce: 2(r-1)/r bytes over the level joining all replicas, 2(r-1) latencies") {
  pw::models::DeviceSpec dev;
  dev.name = "generic";
  const pw::models::Cluster c("two-nodes", dev, {{"node", 2, 1e9, 100}, {"net", 2, 1e8, 1000}});
  CHECK(ring_allreduce(c, {0}, 1000000).total() == 0);
  // Devices 0 and 1 share a node: 2 * 1/2 * 1e6 B / 1e9 B/s = 1 ms, latency 2 * 100 ns.
  CHECK(ring_allreduce(c, {0, 1}, 1000000).occupancy_ns == 1000000);
  CHECK(ring_allreduce(c, {0, 1}, 1000000).latency_ns == 200);
  // Three devices over two nodes: the net level: 2 * 2/3 * 1.5e6 / 1e8 = 20 ms, 4 * 1000 ns.
  CHECK(ring_allreduce(c, {0, 1, 2}, 1500000).occupancy_ns == 20000000);
  CHECK(ring_allreduce(c, {0, 1, 2}, 1500000).latency_ns == 4000);
  CHECK_THROWS_AS(ring_allreduce(c, {0, 4}, 1), pw::InputError);
}

TEST_CASE("predict_replicated_sync: fill-drain with replicas, hand-checkable") {
  // Profile of two layers (only parameter bytes are read); stage 0 on two devices.
  pw::models::Profile prof;
  prof.model = "two";
  prof.layers.resize(2);
  prof.layers[0].name = "a";
  prof.layers[0].parameter_bytes = 1000000;
  prof.layers[1].name = "b";
  pw::models::DeviceSpec dev;
  dev.name = "generic";
  const auto c = pw::models::make_flat_cluster(dev, 3, 1e9);
  Plan p;
  p.schedule = ScheduleKind::one_f_one_b;
  p.batch = 8;
  p.micro_batch_size = 1;
  p.num_micro_batches = 8;
  p.stages = {stage(0, 1, {0, 1}, 2000000, 4000000), stage(1, 2, {2}, 1000000, 2000000)};
  p.stages[0].predicted.comm_ns = 500000;  // x_0 = 0.5 ms per direction
  p.stages[1].predicted.comm_ns = 500000;
  predict_replicated_sync(p, prof, c);
  // all-reduce: 2 * 1/2 * 1e6 / 1e9 = 1 ms. Period max(6/2, 3/1, 0.5/lcm(2,1)) = 3 ms;
  // iteration = (6 + 3) + 2 * 0.5 + 7 * 3 + 1 = 32 ms.
  CHECK(p.stages[0].predicted.allreduce_ns == 1000000);
  CHECK(p.predicted.bottleneck_time_s == doctest::Approx(3e-3).epsilon(1e-12));
  CHECK(p.predicted.iteration_time_s == doctest::Approx(32e-3).epsilon(1e-12));
  CHECK(p.predicted.throughput_samples_per_s == doctest::Approx(8 / 32e-3).epsilon(1e-12));
  CHECK(p.num_devices_used == 3);
  p.schedule = ScheduleKind::pipedream_async;
  CHECK_THROWS_AS(predict_replicated_sync(p, prof, c), pw::InputError);
}

using pw::Json;

// Provenance: make_plan leaves the inputs' hashes to the caller (planning does not serialize its
// inputs); set_plan_inputs records them from the documents, and embeds those when asked.
TEST_CASE("plan inputs: hashes and embedded documents come from set_plan_inputs, not make_plan") {
  const pw::models::ZooOptions zo;
  const auto model = pw::models::build_zoo_model("gpt", zo);
  const auto& dev = pw::models::find_device("a100-80g");
  const auto profile = pw::models::analytic_profile(model, dev, 1, {0.5, false, "adam"});
  const auto cluster = pw::models::make_flat_cluster(dev, 2, 1.25e9);
  PlanRequest req;
  PlanOutcome out = make_plan(profile, cluster, req);
  REQUIRE(out.feasible);
  Plan plan = out.plan;
  CHECK(plan.profile_hash.empty());
  CHECK(plan.cluster_hash.empty());
  set_plan_inputs(plan, profile, cluster, /*embed=*/false);
  CHECK(plan.profile_hash == content_hash(Json(profile)));
  CHECK(plan.cluster_hash == content_hash(Json(cluster)));
  CHECK(plan.profile_hash != plan.cluster_hash);
  CHECK(plan.inputs.empty());
  set_plan_inputs(plan, profile, cluster, /*embed=*/true);
  CHECK(plan.inputs.profile == Json(profile));
  CHECK(plan.inputs.cluster == Json(cluster));
  // The written plan carries both and reads back with them checked (plan_from_json compares them).
  const Plan back = plan_from_json(Json(plan));
  CHECK(back.profile_hash == plan.profile_hash);
  CHECK(back.inputs.profile == plan.inputs.profile);
}
