// The measuring profiler: times each layer's forward (F), input-gradient (B) and weight-gradient
// (W) on this machine and writes the same models::Profile the analytic cost model writes
// (source "measured").
//
// Times. In context (the default, in_context = true): from within real training passes in
// layer order with fresh data every pass, the optimizer step per layer included (step_ns;
// exec/profile/in_context.h), run as co_run_workers copies at once, each pinned to its own
// cores (exec/profile/co_run.h), so a pipeline's contention is in the numbers; medians over
// the passes of all copies (trimmed means with trimmed_mean). With copy_layers / copy_order,
// copy w runs one pipeline worker's layers in that worker's order instead of whole-model
// passes (the prediction of a given plan, exec/runtime/run_compare.h). co_run_workers = 0
// means one copy per `threads` cores of this machine (cpu_count() / threads, at least 1;
// threads 0 counts as all cores: one copy).
// The profile's `measurement` says which mode produced it. Isolated (in_context = false):
// the old way, each layer alone, described below; step_ns stays 0.
// Points: the base point (micro_batch, threads) fills `layers`; every other (micro-batch,
// threads) pair of micro_batches x thread_counts adds an entry to `points`
// (models/profile_points.h), measured the same way.
//
// Bytes (both modes) come from the isolated pass at the base micro-batch, as follows.
//
// Per layer: inputs are the real outputs of the preceding layers on one synthetic micro-batch
// (token ids for embeddings, class ids / values for loss targets); each rep runs F, then B, then
// W on a fresh Context; times are medians over `reps` (after `warmup` reps); the spread
// (max - min) / median of each is reported in LayerMeasurement. Bytes come from the tensors and
// the allocator: output_bytes = output tensor; stash_bytes = what the executor (LayerRange)
// keeps for one micro-batch from the end of F until its backward, attributed to the layer: its
// Context as F leaves it, the targets of a loss, and each forward input of which this layer is
// the FIRST reader (a tensor read by several layers is held once, so it is counted once; the
// sum over a chain of layers is exactly the range's stash, boundary input included; a tensor
// read on both sides of a stage cut is held by both stages but counted once, at its first
// reader); parameter_bytes = parameter tensors; optimizer_bytes = state of `optimizer`
// (models/optimizer_memory catalog); workspace_bytes = allocator peak during F, B and W beyond
// the inputs, output, stash (as above), output gradient and input gradients — transients,
// including what B adds to the Context for a later W. The input layer is marked
// is_data_loading (its time is the copy of the batch) and has stash_bytes 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/profile/co_run.h"
#include "exec/profile/in_context.h"
#include "models/layer_graph.h"
#include "models/profile.h"

namespace pw::exec {

// Passes the tool's own in-context measurements use (run --compare, demo, plan --measure):
// eight untimed passes first, because a fresh process's first passes run slow (pages faulted
// in, OpenMP teams and oneDNN primitives created; with 2 the 2-thread gpt profile read up to
// 1.7x high in one run of four), then nine timed ones (medians).
inline constexpr int kInContextWarmupPasses = 8;
inline constexpr int kInContextTimedPasses = 9;
// plan --measure, many points: three rounds of three timed passes (exec/profiler.cc).
inline constexpr int kInContextRounds = 3;
// MeasureOptions::trimmed_mean: the share of samples dropped at each end.
inline constexpr double kTrimmedMeanShare = 0.05;

struct MeasureOptions {
  int64_t micro_batch = 1;
  int reps = 10;
  int warmup = 2;
  int threads = 0;          // 0: leave the OpenMP default
  bool in_context = true;   // false: each layer alone, in a loop (isolated)
  int co_run_workers = 0;   // in context: copies at once; 0 = one per `threads` cores
  int passes_per_step = 1;  // in context: optimizer step after every this many passes (PassOptions)
  // In context, one point only: per co-run copy, the layers it runs and the order of its ops
  // (PassOptions::layers and ::order; each list empty = every copy runs whole-model passes,
  // else one entry per copy). The prediction of a given plan (exec/runtime/run_compare.h)
  // has copy w compute what the plan's worker w computes: its stages' layers, in its
  // schedule's order. Layers no copy runs are priced 0.
  std::vector<std::vector<bool>> copy_layers;
  std::vector<std::vector<PassOp>> copy_order;
  // Per-layer F, B and W times are kTrimmedMeanShare-trimmed means of the samples instead of
  // medians (models::trimmed_mean_of): what a stage's time, a sum of layer times, is priced
  // from. The optimizer step (a sample per step, few of them) stays a median. With copy_order,
  // each op's layers are then scaled to the trimmed mean of the op's totals (op_totals.h).
  bool trimmed_mean = false;
  // In context: measure every point once per round, `reps` timed passes split over the rounds
  // (ceil(reps / rounds) each, after `warmup` untimed ones every time), samples pooled.
  int rounds = 1;
  // More points: every pair of these (each list empty = the base value alone) other than the
  // base (micro_batch, threads) goes into Profile::points.
  std::vector<int64_t> micro_batches;
  std::vector<int> thread_counts;
  std::string optimizer = "adam";  // for optimizer_bytes
  uint64_t seed = 1;
  // Time with the calling thread's CPU clock instead of the wall clock. Requires threads == 1
  // (all work then runs on the calling thread); robust to other processes competing for the
  // cores, equal to wall time on an idle machine.
  bool thread_cpu_time = false;
  // Called after each layer: (layers done, total, layer name). May be empty.
  std::function<void(int, int, const std::string&)> progress;
  // In context: before any timed pass, each point's memory (all its copies; from the bytes
  // pass, exec/profile/measure_memory.h; from a bytes pass at micro-batch 1 before the base's
  // own when the base is larger) is checked against the available memory. A point
  // that does not fit throws InputError naming it; with drop_sizes_over_memory, a micro-batch
  // size other than the base one that does not fit at some thread count is left out instead
  // and `note` (may be empty) is told why. available_memory_bytes: -1 reads this machine's
  // (MemAvailable), 0 checks nothing, > 0 is taken as given (tests).
  bool drop_sizes_over_memory = false;
  int64_t available_memory_bytes = -1;
  std::function<void(const std::string&)> note;
  // Where the layers run (exec/profile/in_context.h: on a CUDA device, times from CUDA events
  // around each op on its stream). A device is measured in context only, as one copy, without
  // the CPU clock, at one thread count (InputError otherwise); its bytes pass runs there too,
  // so the workspace bytes are the device's caching allocator's; the host's memory is not
  // checked; the profile's device is the GPU's name.
  Device device = Device::cpu();
};

struct LayerMeasurement {
  double forward_spread = 0;  // (max - min) / median over the reps
  double backward_input_spread = 0;
  double backward_weight_spread = 0;
  // Bytes a LayerRange keeps for one micro-batch from a split B until its W, beyond
  // stash_bytes (what B adds to the Context for W, and the output gradient when the layer has
  // weights); 0 for a fused BW. Also in the profile (LayerProfile::weight_pending_bytes).
  int64_t weight_pending_bytes = 0;
};

// Throws InputError for micro_batch < 1, reps < 1, warmup < 0, an unknown optimizer, or a
// model the executor cannot run. `per_copy` (in context only; may be null): one profile per
// co-run copy, equal to the returned one except that the base point's times are the medians of
// that copy's passes alone. Copy w is pinned to the cores Machine::assign gives worker w of a
// run with as many workers as copies, so it prices what the run's worker w computes on its own
// cores (a VM's cores run at different speeds from minute to minute: the pooled medians priced
// one worker's ops up to 24% high and the other's 10% low in the same run).
models::Profile measure_profile(const models::Model& model, const MeasureOptions& options,
                                std::vector<LayerMeasurement>* spreads = nullptr,
                                std::vector<models::Profile>* per_copy = nullptr);

// measure_profile in context, one round at a time, for a caller that chooses when each round
// runs: `run --compare` and `demo` measure their rounds between the run's steps
// (exec/runtime/run_compare.h), so that the profile and the run sample the same minutes of a
// machine whose speed drifts. The constructor checks the options as measure_profile does
// (in_context must be true) and takes the bytes pass; round(reps) times every point once, its
// copies co-run, `reps` (>= 1) timed passes per copy after o.warmup untimed ones, on `on`'s
// threads (exec/profile/co_run.h: a run's own workers) for a point with one copy per such
// thread, else on threads of their own (then `on`'s must have the point's thread count); profile()
// pools every round so far (at least one; measurement.reps = the timed passes per copy) and
// fills `spreads` and `per_copy` as measure_profile does. o.reps and o.rounds are not used
// (o.rounds: the rounds planned, for progress only). Not thread-safe.
class ProfileInRounds {
 public:
  ProfileInRounds(const models::Model& model, const MeasureOptions& o);
  ~ProfileInRounds();
  ProfileInRounds(const ProfileInRounds&) = delete;
  ProfileInRounds& operator=(const ProfileInRounds&) = delete;

  void round(int reps, const CopyThreads* on = nullptr);
  // `reps` (>= 1) more timed passes per copy in the latest round (after a round; each copy
  // again after o.warmup untimed passes), as round() otherwise: a caller that learns the pass
  // time from a round's first passes tops it up to as many as its later rounds will have.
  void top_up(int reps, const CopyThreads* on = nullptr);
  int rounds_done() const;
  int timed_passes() const;  // per copy, over the rounds (and top-ups) so far
  models::Profile profile(std::vector<LayerMeasurement>* spreads = nullptr,
                          std::vector<models::Profile>* per_copy = nullptr) const;

 private:
  void measure(int reps, const CopyThreads* on, bool progress);
  struct State;
  std::unique_ptr<State> s_;
};

// "model name" from /proc/cpuinfo (or "unknown CPU") and the number of online CPUs.
std::string cpu_model_name();
int cpu_count();

}  // namespace pw::exec
