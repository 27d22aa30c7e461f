// Layer: one executable layer (a models::LayerSpec made real), designed for pipelining.
//
// Batch convention: every activation tensor has the micro-batch size as dimension 0 followed by
// the spec's per-sample output_shape. Token ids and class targets are stored as float values
// (exact for ids < 2^24).
//
// Per-micro-batch state. A layer object holds only parameters, gradient buffers and cached
// oneDNN primitives (one set per micro-batch size, created on first use). Everything a
// micro-batch needs from forward until backward lives in a Context that the CALLER owns, plus
// the forward inputs, which the caller must keep alive (unchanged) until that micro-batch's
// backward is finished. So any number of micro-batches can be in flight at once (GPipe, 1F1B):
//
//     Context ctx;                                    // one per (layer, micro-batch)
//     Tensor y  = layer.forward(in, ctx);             // in: the layer's inputs, in spec order
//     auto dx   = layer.backward_input(in, ctx, dy);  // B: grads w.r.t. inputs (may add to ctx)
//     layer.backward_weight(in, ctx, dy);             // W: ACCUMULATES into gradients()
//
// B and W may be called separately, in either order, any time after forward and before the
// context is cleared; each at most once per forward. backward() does both (fused, may be
// faster). A layer never needs its own output from the caller: what it needs of its output it
// keeps in ctx, so the caller may move the output away (send it to the next stage).
//
// Re-materialization: ctx.clear() drops the stash; calling forward(in, ctx) again with the
// same inputs rebuilds it bit-identically (layers are deterministic; dropout draws its mask
// from ctx.step and ctx.first_sample, which the caller sets and clear() keeps).
//
// Loss layers (softmax_xent, mse_loss) take the targets as an extra, last input
// (num_inputs() counts it; it gets no gradient: its slot in backward_input's result is an
// empty Tensor). Their output has shape [1]: the mean loss over the micro-batch's rows
// (softmax_xent over batch*rows rows). grad_output of a loss is the scale of that mean in the
// objective, e.g. 1/num_micro_batches for synchronous pipelines (a [1] tensor).
//
// Weight versions (PipeDream weight stashing, 2BW): parameters() returns pointers to the
// layer's parameter tensors; every forward/backward call reads whatever those tensors hold AT
// CALL TIME (primitives are bound to data pointers per call, never cached with them). A runtime
// keeps older versions by cloning parameters after a step and swapping them in with std::swap
// (O(1): moves buffers) around the forward and backward_input of a micro-batch. backward_weight
// does not read parameters. The optimizer updates the tensors in place.
//
// Thread-safety: a Layer is used by one thread at a time (its stage's worker); distinct layers
// may run concurrently. Kernels use OpenMP / oneDNN threads inside.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "exec/tensor.h"
#include "models/layer_graph.h"

namespace pw::exec {

// What one micro-batch keeps for a layer between forward and backward (beyond the inputs).
struct Context {
  std::vector<Tensor> saved;      // layer-specific tensors (e.g. softmax probabilities)
  std::vector<Context> children;  // sub-layer contexts of composite layers (GPT block)
  int64_t batch = 0;              // micro-batch size of the forward that filled it; 0 = empty
  bool input_grads_done = false;  // composite layers: internal B already computed
  // Where the micro-batch sits in training, set by the caller before forward and kept by
  // clear(): the training step and the index in the step's mini-batch of the micro-batch's
  // first sample. Random layers (dropout) key their draws on them, per sample, so a pipeline
  // and one device over the whole mini-batch draw the same numbers.
  int64_t step = 0;
  int64_t first_sample = 0;

  bool empty() const { return batch == 0; }
  int64_t bytes() const;  // bytes of saved tensors, children included
  void clear();
};

// B and W in either order, for a composite layer whose B computes internal gradients that its
// W needs (attention, transformer_block): `compute` computes the input gradient and keeps the
// internal ones in the Context. B takes the input gradient W kept at saved[slot] when W ran
// first (the last saved tensor), else computes it; W computes and keeps it (at the end of
// saved) when B has not run (`b_done` false), so B finds it there.
template <class Compute>
Tensor input_grad_for_b(Context& ctx, size_t slot, Compute&& compute) {
  if (ctx.saved.size() <= slot) return compute();
  Tensor dx = std::move(ctx.saved[slot]);
  ctx.saved.pop_back();
  return dx;
}
template <class Compute>
void input_grad_for_w(Context& ctx, bool b_done, Compute&& compute) {
  if (!b_done) ctx.saved.push_back(compute());
}

using Inputs = std::span<const Tensor* const>;

class Layer {
 public:
  explicit Layer(models::LayerSpec spec) : spec_(std::move(spec)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const models::LayerSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  // Inputs forward() takes: the spec's inputs, plus 1 for a loss (targets), 1 for input (data).
  virtual int num_inputs() const { return static_cast<int>(spec_.inputs.size()); }
  virtual bool is_loss() const { return false; }
  // Per-sample shape of each input forward() expects (targets included), for checks.
  virtual std::vector<std::vector<int64_t>> input_shapes() const = 0;

  // Fills ctx (cleared first) and returns the output [batch, output_shape...].
  virtual Tensor forward(Inputs in, Context& ctx) = 0;
  // Returns one gradient per input (empty Tensor for inputs without a gradient: data, targets).
  virtual std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) = 0;
  // Accumulates parameter gradients. Default: nothing (layers without parameters).
  virtual void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {}
  // B then W.
  virtual std::vector<Tensor> backward(Inputs in, Context& ctx, const Tensor& grad_out);

  // Parameter and gradient tensors, same order and shapes. Pointers stay valid for the
  // layer's lifetime (the tensors they point at may be swapped, see weight versions).
  // Default: what the layer registered (register_parameter), in that order; layers whose
  // parameters change with what they hold (Network, LayerRange) override both.
  virtual std::vector<Tensor*> parameters() { return params_; }
  virtual std::vector<Tensor*> gradients() { return grads_; }
  void zero_grad();
  int64_t parameter_bytes();
  // Whether backward_weight does any work: the layer has gradients of its own, or (a tied
  // head) accumulates into another layer's. A runtime keeps grad_out from B until W for these.
  virtual bool has_weight_grad() { return !gradients().empty(); }

  // Seeded deterministic initialization of the parameters (same seed -> same values).
  virtual void init_parameters(uint64_t seed) {}

  // Weight tying (a tied lm_head reading an embedding's token table), on any device. An
  // embedding lends its token table and that table's gradient (both null for other layers);
  // share_weight makes an lm_head read `weight` and accumulate its weight gradient into `grad`
  // instead of its own weight, which it then no longer lists in parameters() (a PW_CHECK
  // failure for other layers). Both tensors must outlive the layer's use.
  virtual Tensor* token_table() { return nullptr; }
  virtual Tensor* token_table_grad() { return nullptr; }
  virtual void share_weight(Tensor* weight, Tensor* grad);
  // batch_norm's statistics groups (exec/layers/batch_norm.h: samples per group, 0 = the whole
  // micro-batch); other layers ignore it.
  virtual void set_statistics_group(int64_t samples) {}

 protected:
  // Throws InputError naming the layer when `t` is not [batch, sample...] for the given input.
  void check_input(const Tensor& t, size_t index) const;
  // Appends one parameter and its gradient (same shape) to what parameters() and gradients()
  // list. Both must outlive the layer: members of the layer or of a part it owns.
  void register_parameter(Tensor* value, Tensor* grad);
  // Appends every parameter of `part`, a layer this one is made of, in the part's order.
  void register_parameters_of(Layer& part);
  void clear_parameters();
  models::LayerSpec spec_;

 private:
  std::vector<Tensor*> params_, grads_;
};

// Builds the layer for a spec. Throws InputError for a kind the executor cannot run, for
// missing/invalid attributes, and when `input_shapes` (per sample, one per spec input, from
// the producers) do not match what the layer expects.
std::unique_ptr<Layer> make_layer(const models::LayerSpec& spec, const std::vector<std::vector<int64_t>>& input_shapes);

// The backend seam: the layer for a spec on `device`. cpu: make_layer above. cuda: the CUDA
// backend's layer (exec/cuda/), whose tensors all live on that device. Throws InputError when
// the device cannot be used (unusable_reason), or for a kind that backend does not run.
std::unique_ptr<Layer> make_layer(const models::LayerSpec& spec, const std::vector<std::vector<int64_t>>& input_shapes,
                                  Device device);
// Why `device` cannot run layers here ("" when it can): no backend for it in this build, or
// no usable device (e.g. no GPU, an insufficient driver). Never throws.
std::string unusable_reason(Device device);
// Whether the build has the CUDA backend (PW_WITH_CUDA found nvcc).
bool built_with_cuda();

}  // namespace pw::exec
