// Causal multi-head self-attention.
//
// AttentionCore: qkv [batch, seq, 3*d_model] (q | k | v along the last dim, heads contiguous
// inside each) -> out [batch, seq, d_model]; softmax(q·kᵀ/sqrt(dh) + causal mask)·v per head.
// Batched oneDNN matmuls over (batch, head) on strided views of qkv (no transposes copied);
// the masked softmax and its backward are OpenMP loops. Context: the probabilities
// [batch, heads, seq, seq].
//
// Attention (kind "attention", attrs seq, d_model, heads): x -> qkv linear (bias) -> core ->
// out-projection linear (bias). Composite: its Context holds the sub-contexts and internal
// activations; B computes the internal gradients once (kept in ctx for W).
#pragma once

#include <memory>

#include "exec/dnnl_util.h"
#include "exec/layer.h"
#include "exec/layers/linear.h"

namespace pw::exec {

class AttentionCore {
 public:
  AttentionCore(int64_t seq, int64_t d_model, int64_t heads);
  Tensor forward(const Tensor& qkv, Context& ctx);
  Tensor backward(const Tensor& qkv, const Context& ctx, const Tensor& grad_out);

 private:
  int64_t seq_, d_, heads_, dh_;
  MatmulCache scores_, mix_, d_probs_, d_v_, d_q_, d_k_;
};

class Attention : public Layer {
 public:
  Attention(models::LayerSpec spec, int64_t seq, int64_t d_model, int64_t heads);
  std::vector<std::vector<int64_t>> input_shapes() const override { return {{seq_, d_}}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override;

  // Pieces shared with TransformerBlock. ctx.saved = {qkv, a}; ctx.children = {qkv, proj}.
  Tensor forward_parts(const Tensor& x, Context& ctx);
  // Computes dx and keeps the internal gradients in ctx (saved[2] = dqkv) for W.
  Tensor backward_parts(const Tensor& x, Context& ctx, const Tensor& grad_out);
  void weight_parts(const Tensor& x, Context& ctx, const Tensor& grad_out);

 private:
  int64_t seq_, d_;
  std::unique_ptr<Linear> qkv_, proj_;
  AttentionCore core_;
};

}  // namespace pw::exec
