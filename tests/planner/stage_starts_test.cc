// Where a model carries module paths (the PyTorch bridge), a stage may begin only at a layer
// with one (models::stage_starts_allowed): the synchronous DP against an exhaustive search over
// the allowed cuts, and every partitioner's cuts at allowed layers only.
#include <doctest/doctest.h>

#include <limits>
#include <random>

#include "models/error.h"
#include "planner/interleave.h"
#include "planner/plan_formats.h"
#include "planner/planner.h"
#include "planner/sync_dp.h"
#include "tests/planner/random_instances.h"

using namespace pw;

namespace {

// Module paths on layer 0 and on each other layer with probability 1/2.
void add_paths(std::mt19937& rng, models::Profile& p) {
  for (size_t i = 0; i < p.layers.size(); ++i)
    if (i == 0 || std::uniform_int_distribution<int>(0, 1)(rng) == 1) p.layers[i].module = "m" + std::to_string(i);
}

// Best iteration over every partition whose stages begin at allowed layers (at most P stages),
// every re-materialization choice the config allows per stage; +inf when none fits.
double brute_force(const planner::SyncModel& model, const std::vector<bool>& ok, int P,
                   const planner::SyncConfig& cfg) {
  const int n = model.n();
  double best = std::numeric_limits<double>::infinity();
  for (unsigned mask = 0; mask < (1u << (n - 1)); ++mask) {
    std::vector<int> cuts{0};
    bool allowed = true;
    for (int c = 1; c < n; ++c)
      if ((mask >> (c - 1)) & 1) {
        allowed = allowed && ok[c];
        cuts.push_back(c);
      }
    cuts.push_back(n);
    const int ps = static_cast<int>(cuts.size()) - 1;
    if (!allowed || ps > P) continue;
    for (unsigned rec = 0; rec < (1u << ps); ++rec) {
      if (cfg.recompute == 0 && rec != 0) break;
      if (cfg.recompute == 1 && rec != (1u << ps) - 1) continue;
      std::vector<planner::SyncStage> st;
      for (int s = 0; s < ps; ++s) st.push_back({cuts[s], cuts[s + 1], ((rec >> s) & 1) != 0});
      const planner::SyncEvaluation e = model.evaluate(st, cfg);
      if (e.fits) best = std::min(best, e.iteration_s);
    }
  }
  return best;
}

bool starts_allowed(const std::vector<planner::SyncStage>& stages, const std::vector<bool>& ok) {
  for (const planner::SyncStage& s : stages)
    if (!ok[s.begin]) return false;
  return true;
}

}  // namespace

TEST_CASE("stage starts: every layer without module paths, only the layers that have one with them") {
  models::Profile p;
  for (const char* name : {"a", "b", "c", "d"}) {
    models::LayerProfile l;
    l.name = name;
    p.layers.push_back(l);
  }
  CHECK(models::stage_starts_allowed(p) == std::vector<bool>{true, true, true, true});
  p.layers[2].module = "layer2";
  CHECK(models::stage_starts_allowed(p) == std::vector<bool>{true, false, true, false});
}

TEST_CASE("stage starts: the sync DP is optimal among the partitions that begin at allowed layers") {
  std::mt19937 rng(20261128);
  int restricted = 0, differs = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const int n = std::uniform_int_distribution<int>(3, 9)(rng);
    models::Profile p = test::random_profile(rng, n, 1);
    add_paths(rng, p);
    const models::Cluster cl = test::random_cluster(rng, 0);
    const planner::SyncModel model(p, cl);
    const std::vector<bool> ok = models::stage_starts_allowed(p);
    restricted += model.restricted_starts() ? 1 : 0;
    models::Profile free = p;
    for (auto& l : free.layers) l.module.clear();
    const planner::SyncModel unrestricted(free, cl);
    for (int m : {1, 3}) {
      for (int rc : {0, 1, -1}) {
        CAPTURE(trial);
        CAPTURE(m);
        CAPTURE(rc);
        planner::SyncConfig cfg;
        cfg.m = m;
        cfg.recompute = rc;
        // A limit that binds on some instances: a third of the whole model's persistent and
        // stashed bytes.
        if (rc == -1) {
          int64_t all = 0;
          for (const auto& l : p.layers) all += 4 * l.parameter_bytes + m * l.stash_bytes;
          cfg.memory_limit = all / 3 + 1;
        }
        double got = std::numeric_limits<double>::infinity();
        const std::vector<planner::SyncStage> st = model.optimize(cfg, &got);
        const double want = brute_force(model, ok, model.max_stages(), cfg);
        if (want == std::numeric_limits<double>::infinity()) {
          CHECK(st.empty());
          continue;
        }
        REQUIRE_FALSE(st.empty());
        CHECK(starts_allowed(st, ok));
        CHECK(got == doctest::Approx(want).epsilon(1e-9));
        CHECK(model.evaluate(st, cfg).iteration_s == doctest::Approx(want).epsilon(1e-9));
        double free_best = std::numeric_limits<double>::infinity();
        unrestricted.optimize(cfg, &free_best);
        CHECK(free_best <= want * (1 + 1e-9));  // fewer cuts allowed: never faster
        differs += free_best < want * (1 - 1e-9) ? 1 : 0;
      }
    }
  }
  CHECK(restricted > 60);
  CHECK(differs > 10);  // the restriction binds on many instances
}

TEST_CASE(
    "stage starts: every partitioner and interleaving cut only where a module path begins, and --format torch names "
    "them") {
  // A chain of 12 layers; paths on 0, 3, 4, 8 and 10 only (a residual block's inner layers have none).
  models::Profile p;
  p.model = "paths";
  p.source = "analytic";
  for (int i = 0; i < 12; ++i) {
    models::LayerProfile l;
    l.name = "n" + std::to_string(i);
    l.kind = "linear";
    l.forward_ns = 1000 * (1 + i % 4);
    l.backward_input_ns = 2000;
    l.backward_weight_ns = 1000;
    l.output_bytes = 4000;
    l.stash_bytes = 1000;
    l.parameter_bytes = 1000;
    if (i == 0 || i == 3 || i == 4 || i == 8 || i == 10) l.module = "block" + std::to_string(i);
    p.layers.push_back(l);
    if (i > 0) p.edges.push_back({i - 1, i});
  }
  const std::vector<bool> ok = models::stage_starts_allowed(p);
  models::DeviceSpec dev;
  dev.name = "dev";
  dev.memory_bytes = int64_t{1} << 40;
  const models::Cluster cl("flat", dev, {{"flat", 4, 1e9, 1000}});
  for (const char* part : {"dp", "even", "gpipe-greedy"}) {
    CAPTURE(part);
    planner::PlanRequest req;
    req.batch = 12;
    req.micro_batches = 12;
    req.schedule = planner::ScheduleKind::one_f_one_b;
    req.partitioner = planner::parse_partitioner(part, "partitioner");
    const planner::PlanOutcome out = planner::make_plan(p, cl, req);
    REQUIRE(out.feasible);
    CHECK(out.plan.num_stages() >= 2);
    for (const planner::StagePlan& s : out.plan.stages) CHECK(ok[s.first_layer]);
    const std::string torch = planner::format_plan_for(out.plan, p, planner::PlanFormat::torch);
    for (size_t s = 1; s < out.plan.stages.size(); ++s)
      CHECK(torch.find("\"" + p.layers[out.plan.stages[s].first_layer].module + "\": SplitPoint.BEGINNING") !=
            std::string::npos);
    if (std::string(part) == "dp") {
      // The async objective (prefix states): straight and replicated.
      for (bool straight : {true, false}) {
        CAPTURE(straight);
        planner::PlanRequest ar;
        ar.batch = 12;
        ar.objective = planner::Objective::async;
        ar.straight = straight;
        const planner::PlanOutcome ao = planner::make_plan(p, cl, ar);
        REQUIRE(ao.feasible);
        if (straight) CHECK(ao.plan.num_stages() >= 2);  // replicated: one stage on every device may win
        for (const planner::StagePlan& s : ao.plan.stages) CHECK(ok[s.first_layer]);
        if (straight) CHECK_NOTHROW(planner::format_plan_for(ao.plan, p, planner::PlanFormat::torch));
      }
      const int stages = out.plan.num_stages();
      if (2 * stages <= 5) {
        const planner::Plan inter = planner::interleave_plan(out.plan, p, 2);
        for (const planner::StagePlan& s : inter.stages) CHECK(ok[s.first_layer]);
        CHECK_NOTHROW(planner::format_plan_for(inter, p, planner::PlanFormat::torch));
      } else {  // five places to begin cannot make 2 x stages virtual stages
        CHECK_THROWS_AS(planner::interleave_plan(out.plan, p, 2), InputError);
      }
    }
  }
}
