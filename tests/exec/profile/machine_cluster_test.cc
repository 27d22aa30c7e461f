// The cluster of a machine as hwloc sees it (exec/profile/machine_cluster.h), on a synthetic
// 2-socket topology: levels, and stages of k cores placed within or across sockets on purpose
// by the planner's threads-per-stage dimension.
#include "exec/profile/machine_cluster.h"

#include <doctest/doctest.h>

#include "models/error.h"
#include "planner/planner.h"

namespace pw::exec {
namespace {

models::DeviceSpec core() {
  models::DeviceSpec d;
  d.name = "core";
  d.memory_bytes = int64_t{1} << 30;
  return d;
}

// input + 2 equal layers measured at micro-batch 4 on `base_threads`; points at sizes 1, 2 on
// the base threads (linear) and, when more_threads > 0, sizes 1, 2, 4 there (times t1, t2, t4).
models::Profile profile(int base_threads, int more_threads, int64_t t1, int64_t t2, int64_t t4) {
  models::Profile p;
  p.model = "toy";
  p.source = "measured";
  p.device = {"cpu", 4, base_threads};
  p.micro_batch = 4;
  models::LayerProfile in;
  in.name = "in";
  in.kind = "input";
  in.is_data_loading = true;
  in.output_bytes = 64;
  p.layers.push_back(in);
  for (int i = 0; i < 2; ++i) {
    models::LayerProfile l;
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
    models::ProfilePoint pt;
    pt.micro_batch = b;
    pt.threads = k;
    pt.layers = {{0, 0, 0, 0}, {t, t, 0, 0}, {t, t, 0, 0}};
    return pt;
  };
  p.points = {point(1, base_threads, 25), point(2, base_threads, 50)};
  if (more_threads > 0)
    for (auto [b, t] : {std::pair<int64_t, int64_t>{1, t1}, {2, t2}, {4, t4}})
      p.points.push_back(point(b, more_threads, t));
  return p;
}

planner::PlanRequest request() {
  planner::PlanRequest r;
  r.batch = 4;
  r.schedule = pw::planner::ScheduleKind::gpipe;
  r.optimizer = "sgd";
  return r;
}

TEST_CASE("machine cluster of a synthetic 2-socket topology: cores within sockets as levels") {
  const Machine m("package:2 core:2 pu:1");
  CHECK(m.num_cores() == 4);
  CHECK(m.num_packages() == 2);
  CHECK(m.package_of_core() == std::vector<int>{0, 0, 1, 1});
  const models::Cluster c = machine_cluster(m, core(), 20e9, 5e9);
  REQUIRE(c.levels().size() == 2);
  CHECK(c.levels()[0].name == "socket");
  CHECK(c.levels()[0].count == 2);
  CHECK(c.levels()[1].count == 2);
  CHECK(c.num_devices() == 4);
  CHECK(c.level_between(0, 1) == 0);
  CHECK(c.level_between(1, 2) == 1);
  // A worker per socket: the runtime's placement is the planner's block d*k .. d*k + k - 1.
  const auto sets = m.assign(2);
  CHECK(sets[0].cores == std::vector<int>{0, 1});
  CHECK(sets[1].cores == std::vector<int>{2, 3});
  CHECK_THROWS_AS(cluster_from_packages({0, 0, 1}, core(), 1e9, 1e9), InputError);
  CHECK(cluster_from_packages({0, 0}, core(), 1e9, 1e9).levels().size() == 1);
  // The hand-off latency sits on every level (a transfer between two cores of one socket pays it).
  const models::Cluster lat = cluster_from_packages({0, 0, 1, 1}, core(), 1e9, 1e9, 70000);
  REQUIRE(lat.levels().size() == 2);
  CHECK(lat.levels()[0].latency_ns == 70000);
  CHECK(lat.levels()[1].latency_ns == 70000);
  CHECK_THROWS_AS(cluster_from_packages({0, 0}, core(), 1e9, 1e9, -1), InputError);
}

TEST_CASE("stages of one core each are placed within a socket") {
  const models::Cluster c = machine_cluster(Machine("package:2 core:2 pu:1"), core(), 1e15, 1e15);
  const planner::PlanOutcome o = planner::make_plan(profile(1, 0, 0, 0, 0), c, request());
  REQUIRE(o.feasible);
  REQUIRE(o.plan.num_stages() == 2);
  CHECK(o.plan.threads_per_stage == 1);
  CHECK(c.level_between(o.plan.stages[0].devices[0], o.plan.stages[1].devices[0]) == 0);  // same socket
}

TEST_CASE("stages of a socket's cores are placed one per socket, across them") {
  // 2 threads: linear in b; 4 threads barely faster. 1 stage on all 4 cores: 380 ns at best;
  // 2 stages of 2 cores, 4 micro-batches of 1: 250 ns.
  models::Profile p = profile(2, 4, 24, 48, 95);
  const models::Cluster c = machine_cluster(Machine("package:2 core:2 pu:1"), core(), 1e15, 1e15);
  const planner::PlanOutcome o = planner::make_plan(p, c, request());
  REQUIRE(o.feasible);
  REQUIRE(o.plan.num_stages() == 2);
  CHECK(o.plan.threads_per_stage == 2);
  CHECK(o.plan.stages[0].devices == std::vector<int>{2});
  CHECK(o.plan.stages[1].devices == std::vector<int>{0});
  CHECK(c.level_between(2, 0) == 1);  // across the sockets
  CHECK(o.plan.num_micro_batches == 4);
  // When 4 threads scale well, one stage on all cores wins.
  const planner::PlanOutcome one = planner::make_plan(profile(2, 4, 10, 20, 40), c, request());
  REQUIRE(one.feasible);
  CHECK(one.plan.num_stages() == 1);
  CHECK(one.plan.threads_per_stage == 4);
}

}  // namespace
}  // namespace pw::exec
