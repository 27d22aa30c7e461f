// The planner's memory model (planner/sync_dp.h) against the simulator's memory tracker
// (sim/engine.h) on random small instances: for gpipe, 1f1b and zb-h1, with and without
// re-materialization, the planner's per-stage memory bounds the simulated per-device peak from
// above and equals it once m >= 2p (every stage reaches its steady-state in-flight count).
#include <doctest/doctest.h>

#include <limits>
#include <random>

#include "planner/plan.h"
#include "planner/sync_dp.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"
#include "tests/planner/random_instances.h"

namespace {

using pw::planner::ScheduleKind;

pw::planner::Plan plan_of(const pw::models::Profile& prof, const std::vector<pw::planner::SyncStage>& st,
                          ScheduleKind kind, int m) {
  pw::planner::Plan plan;
  plan.schedule = kind;
  plan.micro_batch_size = prof.micro_batch;
  plan.num_micro_batches = m;
  plan.batch = prof.micro_batch * m;
  for (size_t s = 0; s < st.size(); ++s) {
    pw::planner::StagePlan sp;
    sp.first_layer = st[s].begin;
    sp.end_layer = st[s].end;
    for (int l = sp.first_layer; l < sp.end_layer; ++l) sp.layer_names.push_back(prof.layers[l].name);
    sp.devices = {static_cast<int>(s)};
    sp.recompute = st[s].recompute;
    plan.stages.push_back(sp);
  }
  return plan;
}

std::vector<int64_t> simulated_peaks(const pw::models::Profile& prof, const pw::planner::Plan& plan) {
  const pw::sim::StageCosts costs = pw::sim::stage_costs_from_plan(plan, prof);
  const auto r = pw::sim::simulate(pw::sim::schedule_for_plan(plan, costs), costs, pw::sim::Network{});
  std::vector<int64_t> out;
  for (const auto& d : r.report.devices) out.push_back(d.peak_memory_bytes);
  return out;
}

}  // namespace

TEST_CASE("planner per-stage memory equals or tightly bounds the simulated peak (gpipe 1f1b zb-h1)") {
  std::mt19937 rng(20240611);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int exact_cases = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const int n = pick(3, 9);
    pw::models::Profile prof = pw::test::random_profile(rng, n, 1);
    for (auto& l : prof.layers) {
      l.optimizer_bytes = 2 * l.parameter_bytes;  // weights + grads + state = 4 x parameters
      l.workspace_bytes = pick(0, 16) * 1000;
      l.weight_pending_bytes = pick(0, 8) * 500;  // held B..W by zb-h1 only
    }
    const pw::models::Cluster cluster = pw::test::random_cluster(rng, int64_t{1} << 40);
    const int p = pick(1, std::min(n, cluster.num_devices()));
    std::vector<pw::planner::SyncStage> st;
    int begin = 0;
    for (int s = 0; s < p; ++s) {
      const int end = s + 1 == p ? n : pick(begin + 1, n - (p - s - 1));
      st.push_back({begin, end, pick(0, 1) == 1});
      begin = end;
    }
    const ScheduleKind kinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1};
    const ScheduleKind kind = kinds[pick(0, 2)];
    const int m = pick(1, 9);
    pw::planner::SyncConfig cfg;
    cfg.m = m;
    cfg.micro_batch_size = 1;
    cfg.gpipe_memory = kind == ScheduleKind::gpipe;
    cfg.zb_memory = kind == ScheduleKind::zb_h1;
    cfg.persistent_per_parameter_byte = 4.0;
    pw::planner::SyncModel model(prof, cluster);
    const pw::planner::SyncEvaluation ev = model.evaluate(st, cfg);
    const std::vector<int64_t> sim = simulated_peaks(prof, plan_of(prof, st, kind, m));
    REQUIRE(sim.size() == static_cast<size_t>(p));
    for (int s = 0; s < p; ++s) {
      CAPTURE(trial);
      CAPTURE(s);
      CAPTURE(m);
      CAPTURE(to_string(kind));
      CAPTURE(st[s].recompute);
      CHECK(ev.stages[s].memory_bytes >= sim[s]);
      if (m >= 2 * p) {
        CHECK(ev.stages[s].memory_bytes == sim[s]);
        ++exact_cases;
      }
    }
  }
  CHECK(exact_cases > 50);
}

TEST_CASE("zb-h1 plans the planner accepts under a memory limit fit in the simulator") {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int planned = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = pick(4, 9);
    pw::models::Profile prof = pw::test::random_profile(rng, n, 1);
    for (auto& l : prof.layers) l.optimizer_bytes = 2 * l.parameter_bytes;
    const pw::models::Cluster cluster = pw::test::random_cluster(rng, int64_t{1} << 40);
    pw::planner::SyncConfig cfg;
    cfg.m = pick(2, 8);
    cfg.zb_memory = true;
    cfg.persistent_per_parameter_byte = 4.0;
    cfg.recompute = pick(-1, 1);
    pw::planner::SyncModel model(prof, cluster);
    const int64_t need = model.min_memory_needed(cfg);
    REQUIRE(need > 0);
    cfg.memory_limit = need + need / 4;
    double it = std::numeric_limits<double>::infinity();  // no incumbent
    const auto st = model.optimize(cfg, &it);
    REQUIRE_FALSE(st.empty());
    ++planned;
    const auto sim = simulated_peaks(prof, plan_of(prof, st, ScheduleKind::zb_h1, cfg.m));
    for (int64_t peak : sim) CHECK(peak <= cfg.memory_limit);
  }
  CHECK(planned == 60);
}
