// Whether an in-context measurement fits in memory before it runs (exec/profile/measure_memory.h,
// MeasureOptions::drop_sizes_over_memory): the estimate on a hand-made profile, the message, and
// measure_profile refusing or leaving out a size when the available memory is set small.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "exec/machine/memory.h"
#include "exec/profile/measure_memory.h"
#include "exec/profile/profiler.h"
#include "models/error.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

models::LayerProfile layer(int64_t params, int64_t opt, int64_t stash, int64_t pending, int64_t out, int64_t ws) {
  models::LayerProfile l;
  l.parameter_bytes = params;
  l.optimizer_bytes = opt;
  l.stash_bytes = stash;
  l.weight_pending_bytes = pending;
  l.output_bytes = out;
  l.workspace_bytes = ws;
  return l;
}

TEST_CASE("measure memory: weights, gradients and state once, the stash held at once scaled by the micro-batch") {
  models::Profile p;
  p.layers = {layer(100, 50, 10, 0, 4, 1), layer(200, 100, 20, 6, 8, 30), layer(0, 0, 5, 0, 2, 0)};
  // state 2 x 100 + 50 + 2 x 200 + 100 = 750; one pass's stash 10 + 20 + 5 = 35; transient
  // max(2 x 4 + 1, 2 x 8 + 30, 2 x 2) = 46. Whole-model passes: W follows each B, so what B
  // keeps for W (6) is not held across layers.
  CHECK(in_context_copy_bytes(p, 1, 1) == 750 + 35 + 46);
  CHECK(in_context_copy_bytes(p, 1, 4) == 750 + 4 * 81);
  CHECK(in_context_copy_bytes(p, 2, 4) == 750 + 2 * 81);  // measured at 2: twice as much at 4
  // A copy that runs only the last two layers (run --compare's worker copies).
  const std::vector<bool> last_two{false, true, true};
  CHECK(in_context_copy_bytes(p, 1, 1, last_two) == 500 + 25 + 46);
  // ... in GPipe order over 2 micro-batches: both micro-batches' stash at once (25 + 25).
  using K = PassOp::Kind;
  CHECK(in_context_copy_bytes(p, 1, 1, last_two,
                              {{K::F, 0, 1, 3}, {K::F, 1, 1, 3}, {K::BW, 1, 1, 3}, {K::BW, 0, 1, 3}}) == 500 + 50 + 46);
  // Split B and W: B keeps what W needs (6) on top of the stash until W frees both:
  // F0 35, B0 41, F1 76, B1 82, W0 41, W1 0.
  CHECK(in_context_copy_bytes(
            p, 1, 1, {},
            {{K::F, 0, 0, 3}, {K::B, 0, 0, 3}, {K::F, 1, 0, 3}, {K::B, 1, 0, 3}, {K::W, 0, 0, 3}, {K::W, 1, 0, 3}}) ==
        750 + 82 + 46);
  CHECK_THROWS_AS(in_context_copy_bytes(p, 1, 1, {}, {{K::F, 0, 0, 4}}), InputError);
  CHECK_THROWS_AS(in_context_copy_bytes(p, 0, 1), InputError);
  CHECK_THROWS_AS(in_context_copy_bytes(p, 1, 0), InputError);
  CHECK_THROWS_AS(in_context_copy_bytes(p, 1, 1, {true}), InputError);
}

TEST_CASE("measure memory: a point over 80% of the available memory is named, with its size and copies") {
  const int64_t gib = int64_t{1} << 30;
  CHECK(measure_memory_shortfall(4, 2, 7 * gib, 10 * gib).empty());  // 70%
  const std::string r = measure_memory_shortfall(4, 2, 9 * gib, 10 * gib);
  CHECK(r == "micro-batch 4 with 2 co-run copies needs about 9.0 GiB, more than 80% of the 10.0 GiB available");
  CHECK(measure_memory_shortfall(1, 1, 9 * gib, 10 * gib).find("1 co-run copy needs") != std::string::npos);
  CHECK(measure_memory_shortfall(4, 2, 90 * gib, 0).empty());  // unknown: not checked
  CHECK(available_memory_bytes() > 0);                         // Linux: MemAvailable
}

TEST_CASE("measured profile: a micro-batch size that would not fit is refused, or left out when allowed") {
  models::ZooOptions z;
  z.width = 64;
  z.depth = 2;
  z.batch = 8;
  const models::Model m = models::build_zoo_model("mlp", z);
  MeasureOptions o;
  o.micro_batch = 1;
  o.threads = 1;
  o.co_run_workers = 2;
  o.reps = 1;
  o.warmup = 0;
  o.micro_batches = {1, 2, 4, 8};
  o.available_memory_bytes = 0;  // not checked: every size measured
  const models::Profile all = measure_profile(m, o);
  REQUIRE(all.points.size() == 3);
  // Room for the two copies at micro-batch 2, not at 4 (the bytes are the same in every pass).
  const int64_t at2 = 2 * in_context_copy_bytes(all, 1, 2), at4 = 2 * in_context_copy_bytes(all, 1, 4);
  REQUIRE(at4 > at2);
  o.available_memory_bytes = static_cast<int64_t>(static_cast<double>(at2 + (at4 - at2) / 2) / kMeasureMemoryShare);
  try {
    measure_profile(m, o);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("micro-batch 4 with 2 co-run copies needs about") != std::string::npos);
  }
  std::vector<std::string> notes;
  o.drop_sizes_over_memory = true;
  o.note = [&notes](const std::string& s) { notes.push_back(s); };
  const models::Profile fit = measure_profile(m, o);
  REQUIRE(fit.points.size() == 1);
  CHECK(fit.points[0].micro_batch == 2);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].find("micro-batch 4 not measured: micro-batch 4 with 2 co-run copies") == 0);
  CHECK(notes[1].find("micro-batch 8 not measured") == 0);
  // The base size is never left out: with no room even for it, the measurement is refused.
  o.available_memory_bytes = 1;
  CHECK_THROWS_AS(measure_profile(m, o), InputError);
  // A base of 2 is checked from micro-batch 1's bytes, scaled: the same sizes fit.
  o.available_memory_bytes = static_cast<int64_t>(static_cast<double>(at2 + (at4 - at2) / 2) / kMeasureMemoryShare);
  o.micro_batch = 2;
  o.micro_batches = {2, 4, 8};
  notes.clear();
  const models::Profile from2 = measure_profile(m, o);
  CHECK(from2.micro_batch == 2);
  CHECK(from2.points.empty());  // 4 and 8 left out, 2 is the base
  CHECK(notes.size() == 2);
  o.drop_sizes_over_memory = false;
  o.micro_batch = 4;
  o.micro_batches = {4};
  try {
    measure_profile(m, o);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("micro-batch 4 with 2 co-run copies needs about") != std::string::npos);
  }
}

}  // namespace
}  // namespace pw::exec
