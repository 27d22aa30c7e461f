// Every shared PipeDream profile plans (default sync objective on 4..64 flat devices and on
// 2-level topologies; async and pipedream on 16 devices), and the DP's predicted iteration time
// is never worse than the GPipe-greedy or even baselines. Also: the grouped stage classes of
// the sync DP give the same optimum as the exact stage-count DP on larger random instances.
#include <doctest/doctest.h>

#include <limits>
#include <random>

#include "models/cluster.h"
#include "models/pipedream_import.h"
#include "planner/planner.h"
#include "planner/sync_dp.h"
#include "tests/planner/pipedream_graphs.h"
#include "tests/planner/random_instances.h"

using namespace pw;

namespace {

const std::string kSharedGraphs = std::string(PW_PIPEDREAM_DIR) + "/";

models::Cluster make(const std::vector<int>& counts) {
  models::DeviceSpec dev;
  dev.name = "gpu16";
  dev.memory_bytes = int64_t{16} << 30;
  std::vector<models::Level> lv;
  const double bw[] = {1.25e10, 1.25e9};
  for (size_t k = 0; k < counts.size(); ++k) lv.push_back({"l" + std::to_string(k), counts[k], bw[k], 0});
  return models::Cluster("test", dev, lv);
}

}  // namespace

TEST_CASE("every shared profile plans: sync on 4..64 devices and 4x4, 8x8, async and pipedream on 16") {
  const std::vector<std::vector<int>> topologies = {{4}, {8}, {16}, {32}, {64}, {4, 4}, {8, 8}};
  for (const char* f : test::kPipeDreamGraphs) {
    CAPTURE(f);
    const models::Profile p = models::import_pipedream_graph(kSharedGraphs + f);
    for (const auto& t : topologies) {
      CAPTURE(t.size());
      CAPTURE(t[0]);
      planner::PlanRequest req;
      planner::PlanOutcome out = planner::make_plan(p, make(t), req);
      REQUIRE(out.feasible);
      CHECK(out.plan.num_stages() >= 1);
      CHECK(out.plan.num_stages() <= t[0] * (t.size() > 1 ? t[1] : 1));
      CHECK(out.plan.predicted.iteration_time_s > 0);
      CHECK(out.plan.stages.back().end_layer == static_cast<int>(p.layers.size()));
    }
    for (const char* obj : {"async", "pipedream"}) {
      CAPTURE(obj);
      planner::PlanRequest req;
      req.objective = planner::parse_objective(obj, "objective");
      req.activation_comm = true;
      planner::PlanOutcome out = planner::make_plan(p, make({16}), req);
      REQUIRE(out.feasible);
      CHECK(out.plan.predicted.bottleneck_time_s > 0);
    }
  }
}

TEST_CASE("unknown-batch PipeDream profiles (GNMT) hold --batch samples, default 64") {
  const models::Profile p = models::import_pipedream_graph(kSharedGraphs + "gnmt/graph.txt");
  CHECK(models::infer_pipedream_batch(p) == 0);
  planner::PlanRequest req;
  req.micro_batches = 8;
  planner::PlanOutcome out = planner::make_plan(p, make({16}), req);
  REQUIRE(out.feasible);
  CHECK(out.plan.batch == 64);
  CHECK(out.plan.micro_batch_size == 8);
  // --batch 32: the same numbers now hold for 32 samples; 8 micro-batches of 4.
  req.batch = 32;
  planner::PlanOutcome out32 = planner::make_plan(p, make({16}), req);
  REQUIRE(out32.feasible);
  CHECK(out32.plan.micro_batch_size == 4);
  CHECK(out32.plan.predicted.iteration_time_s == doctest::Approx(out.plan.predicted.iteration_time_s).epsilon(1e-9));
}

TEST_CASE("the DP is never worse than the gpipe-greedy and even baselines on any shared profile") {
  int strictly_better = 0, compared = 0;
  for (const char* f : test::kPipeDreamGraphs) {
    CAPTURE(f);
    const models::Profile p = models::import_pipedream_graph(kSharedGraphs + f);
    for (const auto& t : std::vector<std::vector<int>>{{4}, {16}, {4, 4}}) {
      for (const char* schedule : {"1f1b", "gpipe"}) {
        planner::PlanRequest req;
        req.schedule = planner::parse_schedule_request(schedule, "schedule");
        const models::Cluster c = make(t);
        planner::PlanOutcome dp = planner::make_plan(p, c, req);
        REQUIRE(dp.feasible);
        for (const char* base : {"gpipe-greedy", "even"}) {
          CAPTURE(base);
          req.partitioner = planner::parse_partitioner(base, "partitioner");
          planner::PlanOutcome b = planner::make_plan(p, c, req);
          if (!b.feasible) continue;  // the DP fits where the baseline does not
          ++compared;
          CHECK(dp.plan.predicted.iteration_time_s <= b.plan.predicted.iteration_time_s * (1 + 1e-9));
          strictly_better += dp.plan.predicted.iteration_time_s < b.plan.predicted.iteration_time_s * (1 - 1e-9);
        }
      }
    }
  }
  CHECK(compared > 150);
  CHECK(strictly_better > compared / 2);
}

TEST_CASE("sync DP: grouped stage classes equal the exact stage-count DP (larger random instances)") {
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int grouped = 0;
  for (int trial = 0; trial < 60; ++trial) {
    models::Profile p = test::random_profile(rng, pick(20, 60), 8);
    models::DeviceSpec dev;
    dev.memory_bytes = pick(0, 1) ? int64_t{1} << 40 : 400000 + pick(0, 10) * 100000;
    std::vector<models::Level> lv;
    if (pick(0, 1)) lv = {{"flat", pick(8, 40), 1e7 * pick(1, 20), pick(0, 3) * 1000}};
    else lv = {{"node", pick(2, 4), 1e8, 1000}, {"net", pick(3, 8), 1e7 * pick(1, 5), pick(0, 5) * 1000}};
    models::Cluster c("c", dev, lv);
    planner::SyncModel model(p, c);
    planner::SyncConfig cfg;
    cfg.m = std::vector<int>{1, 2, 4, 8}[pick(0, 3)];
    cfg.micro_batch_size = 8 / cfg.m;
    cfg.gpipe_memory = pick(0, 1);
    cfg.recompute = pick(-1, 1);
    cfg.memory_limit = dev.memory_bytes;
    CAPTURE(trial);
    double a = std::numeric_limits<double>::infinity(), b = a;
    auto sa = model.optimize(cfg, &a);
    cfg.exact_stage_classes = true;
    auto sb = model.optimize(cfg, &b);
    REQUIRE(sa.empty() == sb.empty());
    if (sa.empty()) continue;
    CHECK(a == doctest::Approx(b).epsilon(1e-9));
    cfg.exact_stage_classes = false;
    CHECK(model.evaluate(sa, cfg).iteration_s == doctest::Approx(a).epsilon(1e-9));
    grouped += (cfg.gpipe_memory ? 1 : cfg.m) + 2 * c.group_size(0) <= model.max_stages() && lv.size() == 2;
  }
  CHECK(grouped > 5);
}
