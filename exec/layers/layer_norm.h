// layer_norm over the last dimension (attrs dim), with gain and bias; eps = 1e-5.
// Context: per-row mean and 1/std. B and W both recompute x̂ from the input and the context.
#pragma once

#include "exec/layer.h"

namespace pw::exec {

class LayerNorm : public Layer {
 public:
  LayerNorm(models::LayerSpec spec, std::vector<int64_t> in_shape, int64_t dim);
  std::vector<std::vector<int64_t>> input_shapes() const override { return {in_shape_}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override;

 private:
  std::vector<int64_t> in_shape_;
  int64_t dim_;
  Tensor gamma_, beta_, grad_gamma_, grad_beta_;
};

}  // namespace pw::exec
