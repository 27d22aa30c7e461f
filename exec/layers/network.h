// Network: every layer of a models::Model instantiated (exec/layer.h), with seeded
// deterministic initialization. LayerRange: a contiguous range of those layers — what one
// pipeline stage (or one virtual chunk) runs — with the per-micro-batch bookkeeping: it keeps
// each in-flight micro-batch's activations and layer contexts, routes tensors inside the
// range, and exposes exactly the tensors that cross its boundaries (skip connections too).
//
// Boundary names. A boundary tensor is named by its producer layer. Two pseudo-producers:
//   ":data"    the batch fed to the model's input layer(s) ([batch, input output_shape]),
//   ":targets" the targets fed to the loss layer (softmax_xent: class ids [batch, rows] as
//              floats; mse_loss: [batch, dim]).
// inputs(): tensors read inside the range but produced before it (or pseudo-producers), in
// order of first use. outputs(): outputs of layers inside the range that a later layer reads,
// and of layers nobody reads (sinks: the loss, whose output is the [1] mean loss), in layer
// order.
//
// Micro-batch protocol (per range, per micro-batch id mb; ids are arbitrary ints):
//   forward(mb, inputs)            -> outputs (each output tensor is the caller's: moved out
//                                     when nothing inside the range reads it, else a copy)
//   backward_input(mb, grads)      -> input gradients (B); grads[i] is the TOTAL gradient of
//                                     outputs()[i] over all its consumers (an empty Tensor means
//                                     zero); for a loss output, the scale of that loss (e.g.
//                                     1/num_micro_batches). Returned gradients are in inputs()
//                                     order; empty Tensors for ":data" / ":targets".
//   backward_weight(mb)            W: accumulates parameter gradients; must follow B of mb;
//                                     then mb is released.
//   backward(mb, grads)            B+W fused; mb is released.
//   drop_stash(mb) / recompute(mb) re-materialization: drop everything except the range's
//                                     inputs; rebuild it by re-running forward before backward
//                                     (backward_* call recompute() themselves when needed).
// Backward frees as it goes: after a layer's W (or its fused B+W) its context is cleared and
// every activation no layer still to run backward reads is dropped (after B alone, only what W
// will not read), so a micro-batch's stash shrinks through its backward, as it would in a
// framework that frees saved tensors once used.
// Several micro-batches may be in flight. Gradients accumulate across micro-batches until
// zero_grad(). Weight versions: see exec/layer.h (swap parameters() tensors).
//
// Thread-safety: one thread at a time per LayerRange; distinct ranges over the same Network
// may be used concurrently from different threads when they do not share layers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/layer.h"
#include "models/layer_graph.h"

namespace pw::exec {

inline constexpr const char* kDataInput = ":data";
inline constexpr const char* kTargetInput = ":targets";

class Network {
 public:
  // Throws InputError for unknown/unsupported kinds, bad attributes and shape mismatches
  // between connected layers (naming both layers).
  // `device`: where the layers, their parameters and gradients live (exec/layer.h's
  // make_layer(spec, shapes, device)); the initial weights are the same on every device.
  // On a device other than the host also for a kind its backend does not run, a device that
  // cannot be used, each named. A tied LM head (tied = 1) reads the first embedding's token table
  // on the same device; both layers' gradients accumulate into that table's one gradient tensor.
  // A head on another device (a pipeline stage of its own) reads a copy of the table on its
  // device, made at construction, with a gradient of its own there: the owner of such a network
  // combines the two (exec/runtime/run_compute.h's per-stage copies).
  explicit Network(const models::Model& model, uint64_t seed = 1, Device device = Device::cpu());
  // Layer i on layer_devices[i] (one per layer of the model; e.g. a pipeline's stages on their
  // own CUDA stream slots). device() is then layer 0's.
  Network(const models::Model& model, uint64_t seed, std::vector<Device> layer_devices);
  // The same, holding the parameters and gradients only of the layers `held` marks (one flag per
  // layer): each other layer gives them back right after its initialization, so a process that
  // runs some stages of a pipeline (an MPI rank) holds those stages' weights, not the model's,
  // and never more than one extra layer's at once. The held layers' initial weights are those of
  // a whole network (each layer draws from its own seed). A tied pair (embedding and head) is
  // held whole when either is. A given-back layer must not run. The host allocator's cache is
  // returned to the system after the build (Allocator::release_cache).
  Network(const models::Model& model, uint64_t seed, std::vector<Device> layer_devices, std::vector<bool> held);

  const models::Model& model() const { return model_; }
  Device device() const { return device_; }
  Device layer_device(int i) const { return layer_devices_.at(static_cast<size_t>(i)); }
  int size() const { return static_cast<int>(layers_.size()); }
  Layer& layer(int i) { return *layers_.at(i); }
  std::vector<Tensor*> parameters();
  std::vector<Tensor*> gradients();
  void zero_grad();
  int64_t parameter_bytes();
  // The tied LM head (tied = 1) and the embedding whose token table it reads; -1 / null if none.
  struct TiedPair {
    int embedding = -1;
    int head = -1;
    Tensor* table = nullptr;
    Tensor* table_grad = nullptr;
  };
  TiedPair tied_pair() const { return tied_; }
  // Makes the tied head read `weight` and accumulate into `grad` instead of the embedding's
  // table (a per-stage copy, see exec/runtime/run_compute.h). Both must outlive the network's use.
  // `weight` on another device than the head's: the head reads a copy of its current values on
  // the head's device (owned by the network) instead.
  void retie_head(Tensor* weight, Tensor* grad);
  // Batch-norm statistics over groups of g samples of each batch (0 = the whole batch); see
  // exec/layers/batch_norm.h. A one-device reference of a pipeline sets its micro-batch size.
  void set_batch_norm_group(int64_t g);
  // Per-sample shape of ":targets" (empty if the model has no loss layer).
  const std::vector<int64_t>& target_shape() const { return target_shape_; }

 private:
  void build(uint64_t seed, const std::vector<bool>& held = {});
  void tie_head(Layer& head, Device at, Tensor* weight, Tensor* grad);
  models::Model model_;
  Device device_;
  std::vector<Device> layer_devices_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<int64_t> target_shape_;
  TiedPair tied_;
  Tensor head_table_, head_table_grad_;  // a tied head's copy on its own device (tie_head)
};

struct BoundaryTensor {
  std::string name;                   // producer layer name, ":data" or ":targets"
  std::vector<int64_t> sample_shape;  // per sample (batch dimension excluded)
};

class LayerRange {
 public:
  // Layers [begin, end) of net (which must outlive the range). Throws InputError if empty.
  LayerRange(Network& net, int begin, int end);
  ~LayerRange();
  LayerRange(const LayerRange&) = delete;
  LayerRange& operator=(const LayerRange&) = delete;

  int begin() const { return begin_; }
  int end() const { return end_; }
  const std::vector<BoundaryTensor>& inputs() const { return inputs_; }
  const std::vector<BoundaryTensor>& outputs() const { return outputs_; }
  bool has_loss() const { return has_loss_; }

  // `inputs` in inputs() order, all with the same batch size; they are kept until mb is
  // released. Throws InputError on a shape mismatch, PW_CHECK if mb is already in flight.
  // step / first_sample: where the micro-batch sits in training (Context::step and
  // first_sample of every layer, for dropout), also for its recomputed forwards.
  std::vector<Tensor> forward(int mb, std::vector<Tensor> inputs, int64_t step = 0, int64_t first_sample = 0);
  std::vector<Tensor> backward_input(int mb, std::vector<Tensor> grad_outputs);
  // weight_done (optional): called with the layer's index after each layer's weight-gradient
  // step (layers in reverse order, every layer of the range, also those no gradient reaches).
  void backward_weight(int mb, const std::function<void(int layer)>* weight_done = nullptr);
  std::vector<Tensor> backward(int mb, std::vector<Tensor> grad_outputs,
                               const std::function<void(int layer)>* weight_done = nullptr);
  void drop_stash(int mb);
  void recompute(int mb);
  // Forgets mb (e.g. an evaluation-only forward).
  void release(int mb);

  bool in_flight(int mb) const;
  int num_in_flight() const;
  // Bytes held for mb (inputs, activations, contexts, pending gradients).
  int64_t stash_bytes(int mb) const;

  std::vector<Tensor*> parameters();
  std::vector<Tensor*> gradients();
  void zero_grad();

 private:
  struct MicroBatch;
  void run_forward(MicroBatch& m, std::vector<Tensor>* outputs);
  void run_backward(MicroBatch& m, std::vector<Tensor> grad_outputs, bool input, bool weight,
                    std::vector<Tensor>* input_grads, const std::function<void(int layer)>* weight_done);
  // Frees what no later backward step of m reads once layer begin_ + i has run its part.
  void release_after_backward(MicroBatch& m, int i, bool input, bool weight);

  Network& net_;
  int begin_;
  int end_;
  bool has_loss_ = false;
  std::vector<BoundaryTensor> inputs_;
  std::vector<BoundaryTensor> outputs_;
  // For each layer in range and each of its forward inputs: where the tensor comes from.
  // source >= 0: layer index (inside the range); source < 0: boundary input -(source+1).
  std::vector<std::vector<int>> sources_;
  std::vector<int> output_layers_;  // layer index of each outputs() entry
  std::vector<bool> read_inside_;   // per layer in range: read by a later layer in range
  std::vector<int> first_reader_;   // per layer in range: lowest layer in range reading it; -1 none
  std::map<int, std::unique_ptr<MicroBatch>> in_flight_;
};

}  // namespace pw::exec
