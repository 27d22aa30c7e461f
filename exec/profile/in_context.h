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
// A pipeline worker's passes (`layers`, `order`): a worker computes only its stages' layers,
// micro-batch after micro-batch in its schedule's order. With a layer mask, a pass runs the
// masked layers alone; an input from an unmasked layer is a stand-in (fresh values every pass,
// token ids for an input layer), as is the gradient of a masked layer's output that an
// unmasked layer reads (in the run both arrive from a neighbouring stage); unmasked layers get
// no samples. With an order, the passes run in steps: each step performs the order's ops (the
// forward or backward of one micro-batch over one layer range, e.g. one stage) in turn, then
// the optimizer step (passes_per_step is not used); warmup and reps count micro-batches and
// round up to whole steps; `before_pass` runs once before each step.
//
// Device (PassOptions::device): on a CUDA device the network, data and optimizer state live
// there and each op is timed by CUDA events recorded around it on the device's stream (read
// back after each pass and each step, when the stream has run them); thread_cpu_time does not
// apply. The host's numbers are unchanged.
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

// One op of PassOptions::order, over the masked layers in [begin, end) of one micro-batch: its
// forward (F), input gradients (B: the layers' output gradients are kept for W), weight
// gradients (W, after B), or both (BW: B then W of each layer, in reverse layer order).
struct PassOp {
  enum class Kind { F, B, W, BW };
  Kind kind = Kind::F;
  int micro_batch = 0;
  int begin = 0, end = 0;
  bool operator==(const PassOp&) const = default;
};

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
  // The layers this copy runs (empty: all of them), and the order of its ops (empty: pass
  // after pass, the forward of every masked layer then their backward). See above. In an
  // order each layer of each micro-batch runs F, then BW or B and W, once each.
  std::vector<bool> layers;
  std::vector<PassOp> order;
  Device device = Device::cpu();  // where the passes run (see above)
};

// Per layer, one entry per recorded pass (ns; none for a layer outside PassOptions::layers).
// step = optimizer step + zeroing of that layer's gradients (0 for layers without parameters),
// one entry per recorded pass that stepped (with an order: per timed step).
struct PassTimes {
  std::vector<std::vector<int64_t>> forward, backward_input, backward_weight, step;
};

PassTimes time_in_context(const models::Model& model, const PassOptions& options);

// The micro-batches an order's step has (the largest micro-batch + 1; 0 for an empty order),
// and the timed passes time_in_context records for `reps` with that order: whole steps.
int order_micro_batches(const std::vector<PassOp>& order);
int timed_passes_for(int reps, const std::vector<PassOp>& order);

// Appends `more`'s samples to `into` layer by layer (pooling co-running copies).
void append_pass_times(PassTimes& into, const PassTimes& more);

// Synthetic data for input layer `idx` (token ids when an embedding reads it, else normal
// values) and targets for a loss layer (class ids or normal values), batch `mb`.
Tensor synthetic_data(const models::Model& model, int idx, int64_t mb, Rng& rng);
// A stand-in for layer `idx`'s output at batch `mb`: synthetic_data for an input layer (unless
// `values`), else normal values of its output shape (`values`: always those, as for a gradient).
Tensor synthetic_output(const models::Model& model, int idx, int64_t mb, Rng& rng, bool values = false);
Tensor synthetic_targets(const models::LayerSpec& spec, const std::vector<int64_t>& shape, int64_t mb, Rng& rng);

// The runtime's optimizer for a profile's optimizer name ("adam", "adam-mixed" -> Adam;
// "sgd-momentum" -> SGD with momentum 0.9; "sgd", "rmsprop" -> SGD without momentum).
OptimizerOptions optimizer_for_profile(const std::string& name);

// Nanoseconds now on the steady clock, or the calling thread's CPU clock.
int64_t profiler_now_ns(bool thread_cpu_time);

}  // namespace pw::exec
