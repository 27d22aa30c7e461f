// In-context layer timing (DESIGN.md, "Fidelity"): per-layer times taken from within real
// training passes, as PipeDream's profiler does with hooks, instead of each layer alone.
//
// One pass = what a synchronous stage holding the whole model does for one micro-batch and
// its step: fresh synthetic data and targets (new values every pass), the forward of every
// layer in layer order, then in reverse order each layer's input gradient (B) and weight
// gradient (W) on the gradients the pass produced, then (after every `passes_per_step`
// passes, and after the last; gradients accumulate in between, as a stage's do over its
// micro-batches) the optimizer step and gradient zeroing of each layer. The network's weights,
// gradients and optimizer state stay live across passes, so they compete for cache as in
// training. Each op is timed by itself
// (steady clock, or the thread's CPU clock). Passes are run `warmup + reps` times; only the
// last `reps` are recorded. `before_pass` (may be empty) runs before every pass, untimed
// (co-run copies use it as a barrier so that they compute at the same time).
//
// Thread-safety: each call builds its own Network; calls on different threads are
// independent (that is how co-run works). Uses the calling thread's OpenMP thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/layers/common.h"
#include "exec/optimizer.h"
#include "exec/tensor.h"
#include "models/layer_graph.h"

namespace pw::exec {

struct PassOptions {
  int64_t micro_batch = 1;
  int reps = 10;
  int warmup = 2;
  uint64_t seed = 1;
  OptimizerOptions optimizer;
  bool thread_cpu_time = false;
  std::function<void()> before_pass;
  // Step after every this many passes (>= 1): a synchronous stage steps once per M
  // micro-batches, so M - 1 of its micro-batches run on the cache a micro-batch left, not on
  // the one a full optimizer step over the weights left.
  int passes_per_step = 1;
};

// PassTimes::step: one entry per recorded pass that stepped.

// Per layer, one entry per recorded pass (ns). step = optimizer step + zeroing of that layer's
// gradients (0 for layers without parameters).
struct PassTimes {
  std::vector<std::vector<int64_t>> forward, backward_input, backward_weight, step;
};

PassTimes time_in_context(const models::Model& model, const PassOptions& options);

// Appends `more`'s samples to `into` layer by layer (pooling co-running copies).
void append_pass_times(PassTimes& into, const PassTimes& more);

// Synthetic data for input layer `idx` (token ids when an embedding reads it, else normal
// values) and targets for a loss layer (class ids or normal values), batch `mb`.
Tensor synthetic_data(const models::Model& model, int idx, int64_t mb, Rng& rng);
Tensor synthetic_targets(const models::LayerSpec& spec, const std::vector<int64_t>& shape, int64_t mb,
                         Rng& rng);

// The runtime's optimizer for a profile's optimizer name ("adam", "adam-mixed" -> Adam;
// "sgd-momentum" -> SGD with momentum 0.9; "sgd", "rmsprop" -> SGD without momentum).
OptimizerOptions optimizer_for_profile(const std::string& name);

// Nanoseconds now on the steady clock, or the calling thread's CPU clock.
int64_t profiler_now_ns(bool thread_cpu_time);

}  // namespace pw::exec
