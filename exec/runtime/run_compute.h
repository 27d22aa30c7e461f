// LayerStageCompute: the StageCompute of real training — each virtual stage is an
// exec::LayerRange of one Network, driven by the pipeline runtime.
//
// Cuts. The payload from virtual stage s to s+1 is every tensor produced at or before s and
// read after s (skip connections are passed through intermediate stages), in producer-layer
// order; the backward payload carries their total gradients in the same order. ":data" and
// ":targets" are never sent: each stage that reads them gets them from the DataFn for its
// micro-batch (as a data loader on that device would).
//
// Data and loss. Micro-batch j of iteration it covers samples [j*b, j*b + b) of the
// iteration's mini-batch (b = micro_batch_size; the last micro-batch may be smaller when
// batch does not divide). Synchronous mode scales each micro-batch's mean loss by
// count_j / batch, so accumulated gradients equal those of one pass over the whole batch.
// Asynchronous mode (PipeDream) steps after every micro-batch with its own mean loss.
//
// Weight versions (asynchronous mode). weight_stashing: a stage runs the forward of j on its
// latest weights and keeps a copy of them, which its backward of j uses; the update applies
// to the latest weights. Vertical sync (OpContext::weight_version >= 0): every stage runs j on
// its own weights as they were after `weight_version` steps; stages keep the older versions
// that micro-batches in flight or still to come may ask for.
//
// PipeDream-2BW (double_buffered, with asynchronous): two weight versions per stage. Every
// micro-batch of mini-batch t runs its forward and backward on W(t-1) (the "shadow" copy; W(-1)
// = W(0)); gradients accumulate over the mini-batch's micro-batches (each micro-batch's loss
// scaled by count_j / batch, as in synchronous mode), and once the stage has run all of them,
// step() applies them to the latest weights: W(t+1) = W(t) - lr * grad(W(t-1)). step() calls
// for earlier micro-batches only count. vertical sync is implied (all stages use t-1).
//
// Tied embeddings across stages (gpt --tied-embeddings with the token embedding and the LM head
// on different stages, synchronous schedules only): as Megatron-LM, the head's stage gets its
// own copy of the table; each step the two owners' gradients of the table are summed and one
// update (an optimizer of its own, from the factory) is applied to the embedding's copy and
// copied to the head's, so both stay identical to one shared table. The owner that steps
// second does this; a synchronous iteration ends with every stage's step, so no forward reads
// the table meanwhile.
//
// Gradient readiness (OpContext::grads_done, stage_compute.h): backward and backward_weight
// report after every layer of the range k = the number of weight_gradients(s) tensors listed
// by the layers before it (each layer's own, in layer order; a table shared by the embedding
// and a tied head is listed under the embedding, which the backward reaches last).
// Re-materialization: a stage with recompute keeps only its inputs per micro-batch after the
// forward (LayerRange::drop_stash) and rebuilds the rest before the backward.
//
// Memory: memory_bytes(s) = parameters + gradients + optimizer state + stashed weight
// versions + LayerRange::stash_bytes of every micro-batch in flight, counted from the tensors
// themselves (exact per stage even though all stages share one process allocator).
// Numerical faults: a non-finite loss (checked after each forward of the loss stage), weight
// gradient (per layer in step(), before the update) or weight (per layer, after it) throws
// NumericalFault
// (exec/numerics.h) with step = iteration + 1, the stage and the layer; the runtime rethrows it.
// Checkpoints (exec/checkpoint.h): checkpoint_state(s) names the stage's weights and optimizer
// state; call it, and restore_counters(), only between iterations.
// Devices: each stage runs on the device of its layers (Network::layer_device; a pipeline on a
// GPU gives every stage its own stream slot). Its micro-batches' data and targets are drawn on
// the host and uploaded, its losses read back (one wait per micro-batch), and the finite checks
// run on the device (one read-back per check); payloads arrive on the stage's device (the
// runtime's hand-off, exec/device_streams.h). A tied table split across stages on devices: the
// head's copy, its gradient and the summed gradient live on their stages' devices; at the step
// each owner reads its gradient back to the host, and the one that steps second uploads the sum,
// updates the embedding's copy on its device and uploads the new table to the head's.
// Thread-safety: as StageCompute (one thread per stage); losses() after the run only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "exec/layers/network.h"
#include "exec/runtime/checkpoint.h"
#include "exec/runtime/stage_compute.h"

namespace pw::exec {

// Fills the ":data" and ":targets" tensors ([count, sample shape...]) for samples
// [first, first + count) of iteration `iteration`'s mini-batch. Must be deterministic and
// thread-safe (called from several stage threads).
using DataFn = std::function<void(int iteration, int64_t first, int64_t count, Tensor* data, Tensor* targets)>;

// The parameter update of one virtual stage. step() reads the gradients and updates the
// parameters in place (it must not zero the gradients; the caller does).
class StageOptimizer {
 public:
  virtual ~StageOptimizer() = default;
  virtual void step() = 0;
  virtual int64_t state_bytes() const = 0;
  // Checkpoint access: named state tensors (loaded in place) and the step count.
  virtual std::vector<std::pair<std::string, Tensor*>> state_tensors() { return {}; }
  virtual int64_t steps() const { return 0; }
  virtual void set_steps(int64_t) {}
};
using OptimizerFactory =
    std::function<std::unique_ptr<StageOptimizer>(std::vector<Tensor*> params, std::vector<Tensor*> grads)>;

struct StageRange {
  int begin = 0;  // first layer
  int end = 0;    // one past the last
  bool recompute = false;
};

struct ComputeConfig {
  int64_t batch = 1;  // samples per mini-batch
  int64_t micro_batch_size = 1;
  bool asynchronous = false;     // PipeDream: per-micro-batch steps with unscaled mean losses
  bool weight_stashing = true;   // asynchronous only
  bool double_buffered = false;  // asynchronous only: PipeDream-2BW (see above)
};

class LayerStageCompute final : public StageCompute {
 public:
  // `net` must outlive the compute. Stages must cover [0, net.size()) contiguously in order;
  // throws InputError otherwise, or when weights are shared across stages in a way other than
  // the tied embedding / LM head of synchronous training.
  LayerStageCompute(Network& net, std::vector<StageRange> stages, ComputeConfig config, DataFn data,
                    const OptimizerFactory& make_optimizer);
  ~LayerStageCompute() override;

  int num_stages() const override { return static_cast<int>(stages_.size()); }
  std::vector<Tensor> forward(const OpContext& ctx, std::vector<Tensor> input) override;
  std::vector<Tensor> backward_input(const OpContext& ctx, std::vector<Tensor> grad_output) override;
  void backward_weight(const OpContext& ctx) override;
  std::vector<Tensor> backward(const OpContext& ctx, std::vector<Tensor> grad_output) override;
  void step(int stage, int iteration) override;
  int64_t weight_version(int stage) const override;
  int64_t memory_bytes(int stage) const override;
  // The optimizer's gradients of the stage (the tied table's copy excluded).
  std::vector<Tensor*> weight_gradients(int stage) override;

  int num_micro_batches() const { return num_micro_batches_; }
  // The virtual stage whose output is the loss (loss() needs its forwards), -1 if none.
  int loss_stage() const { return loss_stage_; }
  int64_t micro_batch_count(int micro_batch) const;
  // Mean loss of an iteration over its whole mini-batch (sample-weighted over micro-batches);
  // requires that the stage holding the loss ran every forward of that iteration.
  double loss(int iteration) const;
  // The share of loss(iteration) of the micro-batches j with j mod replicas == replica (those a
  // replica of the loss stage ran): sum of their mean loss x samples / batch. The shares of all
  // replicas add up to loss(iteration) up to float reordering.
  double loss_share(int iteration, int replica, int replicas) const;
  // Names crossing cut c (between virtual stages c and c+1).
  const std::vector<std::string>& cut(int c) const;
  // Largest sum of in-flight activation bytes (LayerRange::stash_bytes) seen on the stage,
  // sampled after every op; reset_peaks() starts a new window.
  int64_t peak_activation_bytes(int stage) const;
  void reset_peaks();
  // Parameters + gradients + optimizer state of the stage (the baseline memory).
  int64_t weights_optimizer_bytes(int stage) const;
  // The stage's weights ("<layer>/<k>") and optimizer state ("opt/..."), its optimizer step
  // count and weight version: what a checkpoint saves and a resume overwrites. Between
  // iterations only (no micro-batch in flight, no stashed weight version).
  // True when a tied table is split across two stages (each keeps a copy, and the shared
  // optimizer state lives in Tied, which checkpoints do not hold yet).
  bool splits_tied_table() const { return tied_ != nullptr; }
  StageState checkpoint_state(int stage);
  // Sets the optimizer step count and weight version of `stage` from a loaded state.
  void restore_counters(int stage, const StageState& state);
  // Throws NumericalFault(step, stage, layer, "weights after the update") when a weight of the
  // stage is not finite.
  void check_weights(int stage, int64_t step);

 private:
  struct Stage;
  Stage& stage(int s) { return *stages_.at(s); }
  std::vector<Tensor> backward_common(const OpContext& ctx, std::vector<Tensor> grad_output, bool fused);
  void note_activation_peak(Stage& st);
  // Throws NumericalFault for the first non-finite weight (or weight gradient) of the stage.
  void check_finite(int s, int64_t step, bool weights);
  std::vector<Tensor> clone_params(Stage& st);
  void step_tied(Stage& st);
  struct Tied;
  void step_tied_on_devices(Tied& t, Device mine);

  Network& net_;
  ComputeConfig config_;
  DataFn data_;
  int num_micro_batches_ = 1;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::vector<std::vector<std::string>> cuts_;
  int loss_stage_ = -1;
  std::unique_ptr<Tied> tied_;
};

}  // namespace pw::exec
