// dropout (attrs permille: drop probability p = permille / 1000, 0..999) in training mode,
// inverted: y = x * m with m = 0 (probability p) or 1 / (1 - p).
//
// Determinism: the mask of sample i of a micro-batch is drawn from a generator seeded by
// (layer seed from init_parameters, ctx.step, ctx.first_sample + i), so it depends on the
// sample's place in the mini-batch only: a pipeline (any micro-batching, recompute on or off)
// draws exactly the masks of one device running the whole mini-batch. Context: the mask.
#pragma once

#include "exec/layer.h"

namespace pw::exec {

class Dropout : public Layer {
 public:
  Dropout(models::LayerSpec spec, std::vector<int64_t> in_shape, int64_t permille);
  std::vector<std::vector<int64_t>> input_shapes() const override { return {in_shape_}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override { seed_ = seed; }

 private:
  std::vector<int64_t> in_shape_;
  int64_t permille_;
  uint64_t seed_ = 1;
};

}  // namespace pw::exec
