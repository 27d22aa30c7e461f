// concat: joins its inputs along the first per-sample dimension (channels of [c, h, w] maps,
// features of [n] vectors); the other dimensions must agree. Forward is oneDNN's concat
// primitive (created once per micro-batch size); backward slices the output gradient.
// No context, no parameters.
#pragma once

#include <map>
#include <memory>

#include "exec/layer.h"

namespace pw::exec {

class Concat : public Layer {
 public:
  Concat(models::LayerSpec spec, std::vector<std::vector<int64_t>> in_shapes);
  ~Concat() override;
  std::vector<std::vector<int64_t>> input_shapes() const override { return in_shapes_; }
  std::vector<int64_t> output_sample_shape() const { return out_shape_; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  struct Prims;
  Prims& prims(int64_t batch);
  std::vector<std::vector<int64_t>> in_shapes_;
  std::vector<int64_t> out_shape_;
  std::vector<int64_t> in_elems_;  // per input, elements per sample
  int64_t out_elems_ = 0;
  std::map<int64_t, std::unique_ptr<Prims>> cache_;
};

}  // namespace pw::exec
