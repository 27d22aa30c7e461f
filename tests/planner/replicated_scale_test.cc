// The replicated DP's speed-ups change no result: the split windows (lower-bound pruning), the
// rows solved on demand and the budgets give bit-for-bit the plan of the exhaustive loop, on the
// shared PipeDream profiles over two and three levels and on random instances.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "models/pipedream_import.h"
#include "planner/cut_states.h"
#include "planner/replicated_dp.h"
#include "tests/planner/random_instances.h"

using namespace pw;
using namespace pw::planner;

namespace {

void check_same(const ReplicatedResult& a, const ReplicatedResult& b) {
  REQUIRE(a.feasible == b.feasible);
  CHECK(a.bottleneck_s == b.bottleneck_s);  // bitwise: the same candidate wins
  REQUIRE(a.stages.size() == b.stages.size());
  for (size_t k = 0; k < a.stages.size(); ++k) {
    CAPTURE(k);
    CHECK(a.stages[k].start == b.stages[k].start);
    CHECK(a.stages[k].end == b.stages[k].end);
    CHECK(a.stages[k].devices == b.stages[k].devices);
  }
  CHECK(a.table == b.table);
}

// Pruned vs exhaustive; returns the pruned result.
ReplicatedResult compare_result(const CutStates& s, const std::vector<ReplicatedLevel>& levels, ReplicatedOptions o) {
  o.exhaustive_splits = true;
  ReplicatedResult exhaustive = replicated_partition(s, levels, o);
  o.exhaustive_splits = false;
  ReplicatedResult fast = replicated_partition(s, levels, o);
  check_same(exhaustive, fast);
  return fast;
}

// Seeded draws of the random-instance tests: pick(lo, hi) is uniform on [lo, hi]; `rng` (the
// same engine) draws the random profiles.
struct Draw {
  explicit Draw(uint32_t seed) : rng(seed) {}
  int operator()(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  std::mt19937 rng;
};

// PipeDream's antichain states (quirks) or topological prefixes, complete.
CutStates states_of(const models::Profile& p, bool quirks) {
  CutStates s = quirks ? pipedream_states(p, 100000) : prefix_states(p, false);
  REQUIRE(s.complete);
  return s;
}

// Pruned vs exhaustive; returns the number of stages.
size_t compare(const CutStates& s, const std::vector<ReplicatedLevel>& levels, const ReplicatedOptions& o) {
  return compare_result(s, levels, o).stages.size();
}

}  // namespace

TEST_CASE("replicated DP: windows and budgets change no plan on the shared profiles") {
  const std::string dir = std::string(PW_PIPEDREAM_DIR) + "/";
  for (const char* f :
       {"alexnet/graph.txt", "vgg16/graph.txt", "resnet18/graph.txt", "gnmt/graph.txt", "squeezenet1_0/graph.txt"}) {
    CAPTURE(f);
    models::Profile p = models::import_pipedream_graph(dir + f);
    for (bool quirks : {true, false}) {
      CAPTURE(quirks);
      CutStates s = quirks ? pipedream_states(p, 5000) : prefix_states(p, false);
      REQUIRE(s.complete);
      for (const auto& lv :
           std::vector<std::vector<ReplicatedLevel>>{{{16, 1.25e10, 1e-6}},
                                                     {{4, 1.25e10, 1e-6}, {4, 1.25e9, 5e-6}},
                                                     {{2, 1.25e10, 1e-6}, {2, 1.25e9, 2e-6}, {3, 1.25e8, 1e-5}}}) {
        CAPTURE(lv.size());
        for (bool fewer : {false, true}) {
          ReplicatedOptions o;
          o.quirks = quirks;
          o.fewer_machines = fewer;
          o.activation_comm = true;
          o.use_memory_constraint = !quirks;
          o.memory_bytes = 4e9;
          o.time_scale = 1e-9 * 4;
          o.activation_scale = 4;
          compare(s, lv, o);
        }
      }
    }
  }
}

TEST_CASE("replicated DP: windows and budgets change no plan on random instances") {
  Draw pick(1616);
  int multi = 0;
  for (int trial = 0; trial < 300; ++trial) {
    CAPTURE(trial);
    const bool quirks = pick(0, 1) == 0;
    models::Profile p = test::random_profile(pick.rng, pick(3, 24), 4);
    const CutStates s = states_of(p, quirks);
    std::vector<ReplicatedLevel> levels;
    const int L = pick(1, 3);
    for (int l = 0; l < L; ++l) levels.push_back({pick(1, 4), 1e7 * pick(1, 40), quirks ? 0.0 : pick(0, 3) * 1e-6});
    ReplicatedOptions o;
    o.quirks = quirks;
    o.straight = pick(0, 5) == 0;
    o.fewer_machines = pick(0, 1) == 0;
    o.activation_comm = pick(0, 3) != 0;
    o.time_scale = 1e-9 * pick(1, 3);
    o.activation_scale = pick(1, 3);
    o.use_memory_constraint = pick(0, 1) == 0;
    o.memory_bytes = 1000.0 * pick(20, 400);
    multi += compare(s, levels, o) > 1;
  }
  CHECK(multi > 50);
}

// Wider machine counts (8 and 16 per level) exercise the prefix cap, the walk from the guessed
// crossing, the memory clamp and the per-r_parent rows solved on demand; tight memory leaves
// cells without an incumbent and many rows bound by memory.
TEST_CASE("replicated DP: pruning changes no plan with many machines per level on random instances") {
  Draw pick(4242);
  int multi = 0;
  for (int trial = 0; trial < 60; ++trial) {
    CAPTURE(trial);
    const bool quirks = trial % 2 == 0;
    models::Profile p = test::random_profile(pick.rng, pick(12, 40), 4);
    const CutStates s = states_of(p, quirks);
    std::vector<ReplicatedLevel> levels;
    const int L = pick(1, 4) == 1 ? 3 : 2;
    for (int l = 0; l < L; ++l)
      levels.push_back({L == 3 ? pick(2, 4) : pick(3, 12), 1e7 * pick(1, 40), quirks ? 0.0 : pick(0, 3) * 1e-6});
    ReplicatedOptions o;
    o.quirks = quirks;
    o.fewer_machines = pick(0, 3) == 0;
    o.activation_comm = pick(0, 3) != 0;
    o.time_scale = 1e-9 * pick(1, 3);
    o.activation_scale = pick(1, 3);
    o.use_memory_constraint = !quirks || pick(0, 2) == 0;
    o.memory_bytes = 1000.0 * pick(40, 600);
    multi += compare(s, levels, o) > 1;
  }
  CHECK(multi > 20);
}

TEST_CASE("replicated DP: pruning changes no plan on resnet50 and gnmt with 8 and 16 machines per level") {
  const std::string dir = std::string(PW_PIPEDREAM_DIR) + "/";
  for (const char* f : {"resnet50/graph.txt", "gnmt/graph.txt"}) {
    CAPTURE(f);
    models::Profile p = models::import_pipedream_graph(dir + f);
    for (bool quirks : {true, false}) {
      CAPTURE(quirks);
      CutStates s = quirks ? pipedream_states(p, 5000) : prefix_states(p, false);
      REQUIRE(s.complete);
      for (const auto& lv : std::vector<std::vector<ReplicatedLevel>>{{{8, 1.25e10, 1e-6}, {8, 1.25e9, 5e-6}},
                                                                      {{16, 1.25e10, 1e-6}, {4, 1.25e9, 5e-6}}}) {
        CAPTURE(lv[0].machines);
        ReplicatedOptions o;
        o.quirks = quirks;
        o.activation_comm = true;
        o.use_memory_constraint = !quirks;
        o.memory_bytes = 16e9;
        o.time_scale = 1e-9;
        o.activation_scale = 1;
        CHECK(compare(s, lv, o) > 1);
      }
    }
  }
}

// Two levels, corrected model, memory just binding: rows solved again per r_parent under their
// own budget (U * r_parent) and rows shared by every r_parent; the memory limit is swept so that
// some plans replicate a memory-bound level-1 stage.
TEST_CASE("replicated DP: per-r_parent rows under budgets change no plan on random instances") {
  Draw pick(16016);
  int multi = 0;
  for (int trial = 0; trial < 120; ++trial) {
    CAPTURE(trial);
    models::Profile p = test::random_profile(pick.rng, pick(6, 20), 4);
    CutStates s = prefix_states(p, false);
    REQUIRE(s.complete);
    const std::vector<ReplicatedLevel> levels{{pick(2, 6), 1e7 * pick(1, 40), pick(0, 3) * 1e-6},
                                              {pick(2, 4), 1e7 * pick(1, 40), pick(0, 3) * 1e-6}};
    for (int mem = 20; mem <= 320; mem += 30) {
      CAPTURE(mem);
      ReplicatedOptions o;
      o.quirks = false;
      o.fewer_machines = pick(0, 3) == 0;
      o.activation_comm = true;
      o.time_scale = 1e-9 * pick(1, 3);
      o.activation_scale = pick(1, 3);
      o.use_memory_constraint = true;
      o.memory_bytes = 1000.0 * mem;
      multi += compare(s, levels, o) > 1;
    }
  }
  CHECK(multi > 25);  // 34 with this seed
}

// Two levels whose outer link is slow against the inner one, with heavy parameters (the outer
// all-reduce and transfers dominate, as on the shared profiles' 8x8 and 16x4): the single-stage
// bound H is often the optimum itself, so the final attempt runs under a budget G equal to the
// final value, the per-cell budgets of the inner rows are tight for the plan's inner stages, and
// the transfer and all-reduce bounds decide which inner rows are solved at all.
TEST_CASE("replicated DP: tight single-stage and per-cell budgets change no plan on random instances") {
  Draw pick(160316);
  int tight = 0, below = 0, multi = 0, budgeted = 0;
  for (int trial = 0; trial < 240; ++trial) {
    CAPTURE(trial);
    const bool quirks = trial % 2 == 0;
    models::Profile p = test::random_profile(pick.rng, pick(6, 26), 4);
    for (auto& l : p.layers) l.parameter_bytes *= pick(1, 20);
    const CutStates s = states_of(p, quirks);
    // One machine per inner group now and then: the inner cost is then the compute itself and the
    // all-reduce bound taken before an inner row is solved is tight.
    const std::vector<ReplicatedLevel> levels{
        {pick(0, 3) == 0 ? 1 : pick(2, 8), 1e8 * pick(1, 40), quirks ? 0.0 : pick(0, 3) * 1e-6},
        {pick(2, 6), 1e6 * pick(1, 400), quirks ? 0.0 : pick(0, 3) * 1e-6}};
    ReplicatedOptions o;
    o.quirks = quirks;
    o.fewer_machines = pick(0, 3) == 0;
    o.activation_comm = pick(0, 3) != 0;
    o.time_scale = 1e-9 * pick(1, 3);
    o.activation_scale = pick(1, 3);
    o.use_memory_constraint = !quirks || pick(0, 2) == 0;
    o.memory_bytes = 1000.0 * pick(100, 4000);
    const ReplicatedResult r = compare_result(s, levels, o);
    multi += r.stages.size() > 1;
    if (!r.feasible || r.budget_s == 0) continue;  // no budget: U had no value
    ++budgeted;
    CHECK(r.single_stage_bound_s >= r.bottleneck_s);  // an upper bound on the optimum
    below += r.single_stage_bound_s < r.bottleneck_s * 1.5;
    tight += r.budget_s == r.bottleneck_s;  // the budget is the optimum itself
  }
  CHECK(multi > 60);      // 152 with this seed
  CHECK(budgeted > 100);  // 148
  CHECK(tight > 40);      // 63: the final attempt's budget is the optimum itself
  CHECK(below > 50);      // 73: H within 1.5x of the optimum
}

// One machine per inner group and two or three groups: the inner cost is the segment's compute
// itself, so the all-reduce bound taken before an inner row is solved equals the last stage's
// time, and the single-stage bound is the optimum (the restriction restricts nothing); the
// final cell is the first to ask for most rows, under a budget equal to its value.
TEST_CASE("replicated DP: the bound before an inner row is solved is exact where it is tight") {
  Draw pick(1601);
  int tight = 0;
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    const bool quirks = trial % 2 == 0;
    models::Profile p = test::random_profile(pick.rng, pick(4, 20), 4);
    for (auto& l : p.layers) l.parameter_bytes *= pick(1, 20);
    const CutStates s = states_of(p, quirks);
    const std::vector<ReplicatedLevel> levels{{1, 1e12, 0.0},
                                              {pick(2, 3), 1e6 * pick(1, 400), quirks ? 0.0 : pick(0, 1) * 1e-6}};
    ReplicatedOptions o;
    o.quirks = quirks;
    o.activation_comm = pick(0, 1) == 0;
    o.time_scale = 1e-9 * pick(1, 3);
    const ReplicatedResult r = compare_result(s, levels, o);
    REQUIRE(r.feasible);
    tight += r.budget_s == r.bottleneck_s;
  }
  CHECK(tight > 150);
}

// The same with light parameters and heavy activations (corrected model): transfers are the
// bottleneck and the budget is the optimum itself (all 200 with this seed). The transfer test
// taken before an inner row is solved applies only to a row's first request, where it is
// rarely tight (a hand mutation of it, 1e-6 too strong, fails a test only with that gating off).
TEST_CASE("replicated DP: transfer-bound plans under a tight budget change no plan on random instances") {
  Draw pick(1602);
  int tight = 0;
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    models::Profile p = test::random_profile(pick.rng, pick(4, 16), 4);
    for (auto& l : p.layers) {
      l.parameter_bytes /= 100;
      l.output_bytes *= pick(1, 10);
    }
    CutStates s = prefix_states(p, false);
    REQUIRE(s.complete);
    const std::vector<ReplicatedLevel> levels{{1, 1e12, 0.0}, {pick(3, 4), 1e7 * pick(1, 100), pick(0, 1) * 1e-6}};
    ReplicatedOptions o;
    o.quirks = false;
    o.time_scale = 1e-9 * pick(1, 3);
    o.activation_scale = pick(1, 3);
    const ReplicatedResult r = compare_result(s, levels, o);
    REQUIRE(r.feasible);
    tight += r.budget_s == r.bottleneck_s;
  }
  CHECK(tight > 150);
}

TEST_CASE("replicated DP: a prefix worth +inf stays a plan when nothing bounds the cell") {
  // Corrected model, 2 machines over a vanishing bandwidth: every split's prefix time is
  // cut / B = +inf, and the whole model on both machines fails memory (300000 > 250000); the
  // exhaustive loop keeps a split (bottleneck +inf, 2 stages), so the pruned one must too (the
  // prefix cap once cut such prefixes with the empty cells). Windows of 3 and of 12 states.
  for (int n : {3, 12}) {
    CAPTURE(n);
    models::Profile p;
    p.model = "inf";
    p.source = "analytic";
    p.micro_batch = 4;
    for (int i = 0; i < n; ++i) {
      models::LayerProfile l;
      l.name = "L" + std::to_string(i);
      l.kind = "linear";
      l.forward_ns = 1000;
      l.backward_input_ns = 1000;
      l.output_bytes = 1000;
      l.stash_bytes = 100000;
      p.layers.push_back(l);
    }
    for (int i = 0; i + 1 < n; ++i) p.edges.push_back({i, i + 1});
    ReplicatedOptions o;
    o.quirks = false;
    o.fewer_machines = false;
    o.use_memory_constraint = true;
    o.memory_bytes = n * 100000.0 - 50000.0;
    o.time_scale = 1e-9;
    const ReplicatedResult r = compare_result(states_of(p, false), {{2, 1e-310, 0.0}}, o);
    CHECK(r.feasible);
  }
}
