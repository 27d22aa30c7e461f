// The what-if studies with the planner's fast solver for repeated layers against the same
// studies with the DP on every probe (EvalOptions::exact_partitioning): the largest model that
// fits, and the plan at a given size, must be the same.
#include <doctest/doctest.h>

#include <string>

#include "models/cost.h"
#include "planner/uniform_sync.h"
#include "whatif/eval.h"
#include "whatif/max_model.h"

using namespace pw::whatif;

namespace {

// GPipe's Table 1 transformer (d_model 2048, ffn 8192) with a shorter sequence and batch, so
// that a device holds tens of blocks and the DP answers in well under a second per plan.
WhatifConfig small_gpt() {
  WhatifConfig c;
  c.family = "gpt";
  c.d_model = 2048;
  c.ffn = 8192;
  c.heads = 32;
  c.seq = 256;
  c.vocab = 32000;
  c.batch = 8;
  c.device = "tpu-v3-core";
  c.optimizer = "rmsprop";
  c.recompute = "on";
  return c;
}

// With re-materialization on every stage, the DP chooses among partitions of exactly equal
// cost by rounding (planner/uniform_sync.h): the same stage count, micro-batches and iteration
// time then, and the same split elsewhere.
void check_same_plan(const WhatifEvaluation& a, const WhatifEvaluation& b, bool same_split) {
  REQUIRE(a.feasible == b.feasible);
  if (!a.feasible) {
    CHECK(a.outcome.min_memory_bytes_to_fit == b.outcome.min_memory_bytes_to_fit);
    CHECK(a.outcome.max_batch_that_fits == b.outcome.max_batch_that_fits);
    return;
  }
  const auto& p = a.outcome.plan;
  const auto& q = b.outcome.plan;
  CHECK(p.num_micro_batches == q.num_micro_batches);
  REQUIRE(p.num_stages() == q.num_stages());
  CHECK(p.predicted.iteration_time_s == doctest::Approx(q.predicted.iteration_time_s).epsilon(1e-12));
  int recomputed = 0;
  for (int s = 0; s < p.num_stages(); ++s) recomputed += p.stages[s].recompute == q.stages[s].recompute ? 0 : 1;
  CHECK(recomputed == 0);
  if (!same_split) return;
  for (int s = 0; s < p.num_stages(); ++s) {
    CAPTURE(s);
    CHECK(p.stages[s].first_layer == q.stages[s].first_layer);
    CHECK(p.stages[s].end_layer == q.stages[s].end_layer);
    CHECK(p.stages[s].predicted.memory_bytes == q.stages[s].predicted.memory_bytes);
  }
  CHECK(p.predicted.iteration_time_s == q.predicted.iteration_time_s);
  CHECK(p.predicted.peak_memory_bytes == q.predicted.peak_memory_bytes);
}

}  // namespace

TEST_CASE("max-model: the fast solver finds the DP's layer counts and plans") {
  for (std::string rec : {"on", "off", "auto"})
    for (std::string schedule : {"1f1b", "gpipe"})
      for (int devices : {1, 2, 4, 8}) {
        WhatifConfig c = small_gpt();
        c.recompute = rec;
        c.schedule = schedule;
        c.devices = devices;
        CAPTURE(rec);
        CAPTURE(schedule);
        CAPTURE(devices);
        const MaxModelResult fast = find_max_model(c, MaxModelMode::pipelined, 4096, false);
        const MaxModelResult exact = find_max_model(c, MaxModelMode::pipelined, 4096, true);
        CHECK(fast.layers == exact.layers);
        CHECK(fast.stages == exact.stages);
        CHECK(fast.micro_batches == exact.micro_batches);
        CHECK(fast.recompute_stages == exact.recompute_stages);
        CHECK(fast.iteration_s == doctest::Approx(exact.iteration_s).epsilon(1e-12));
        if (rec != "on") CHECK(fast.memory_bytes == exact.memory_bytes);
        // The plan at the size found, and one layer more (infeasible: its diagnosis too).
        for (int64_t extra : {0, 1}) {
          c.layers = fast.layers + extra;
          EvalOptions eo;
          eo.simulate = false;
          eo.prescreen = false;
          const WhatifEvaluation f = evaluate_whatif(c, eo);
          eo.exact_partitioning = true;
          check_same_plan(f, evaluate_whatif(c, eo), rec != "on");
        }
      }
}

TEST_CASE("whatif plans: fast and DP agree on a grid of sizes, devices, micro-batches") {
  int checked = 0;
  for (int64_t layers : {4, 17, 48})
    for (int devices : {1, 4, 8, 32})
      for (std::string mb : {"auto", "1", "8"})
        for (std::string rec : {"off", "auto"}) {
          WhatifConfig c = small_gpt();
          c.layers = layers;
          c.devices = devices;
          c.micro_batches = mb;
          c.recompute = rec;
          c.device = "a100-80g";  // compute-bound: every stage fits without re-materialization
          CAPTURE(layers);
          CAPTURE(devices);
          CAPTURE(mb);
          CAPTURE(rec);
          EvalOptions eo;
          eo.simulate = false;
          const WhatifEvaluation f = evaluate_whatif(c, eo);
          eo.exact_partitioning = true;
          check_same_plan(f, evaluate_whatif(c, eo), true);
          ++checked;
        }
  CHECK(checked == 72);
}

TEST_CASE("layers that differ take the DP: an MLP alternates linear and relu") {
  WhatifConfig c;
  c.family = "mlp";
  c.depth = 12;
  c.width = 1024;
  c.batch = 16;
  c.devices = 4;
  const auto model = build_whatif_model(c);
  const auto profile = build_whatif_profile(model, c);
  CHECK_FALSE(pw::planner::find_uniform_run(profile).has_value());
  EvalOptions eo;
  eo.simulate = false;
  const WhatifEvaluation f = evaluate_whatif(c, eo);
  eo.exact_partitioning = true;
  check_same_plan(f, evaluate_whatif(c, eo), true);
}
