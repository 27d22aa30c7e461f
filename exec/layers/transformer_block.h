// transformer_block (attrs seq, d_model, heads, ffn): pre-norm GPT block
//   x1 = x + attention(ln1(x));  y = x1 + fc2(gelu(fc1(ln2(x1))))
// with biases on every projection. Composite layer: the Context keeps the internal activations
// (ln1 out, x1, ln2 out, fc1 out, gelu out) and sub-contexts; B computes all internal
// gradients once and keeps the ones W needs in the Context (so B and W run in either order).
#pragma once

#include <memory>

#include "exec/layer.h"
#include "exec/layers/attention.h"
#include "exec/layers/layer_norm.h"
#include "exec/layers/linear.h"

namespace pw::exec {

class TransformerBlock : public Layer {
 public:
  TransformerBlock(models::LayerSpec spec, int64_t seq, int64_t d_model, int64_t heads, int64_t ffn);
  std::vector<std::vector<int64_t>> input_shapes() const override { return {{seq_, d_}}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override;

 private:
  Tensor input_grads(const Tensor& x, Context& ctx, const Tensor& grad_out);
  int64_t seq_, d_, ffn_;
  std::unique_ptr<LayerNorm> ln1_, ln2_;
  std::unique_ptr<Attention> attn_;
  std::unique_ptr<Linear> fc1_, fc2_;
};

}  // namespace pw::exec
