// avg_pool (attrs c, kernel, stride (default kernel), pad (default 0), in_h, in_w) on NCHW
// activations from oneDNN's pooling primitives (average including padding, as torchvision's
// AvgPool2d). Global average pooling is kernel = in_h = in_w (output [c, 1, 1]). No context.
#pragma once

#include <map>
#include <memory>

#include "exec/layer.h"

namespace pw::exec {

class AvgPool : public Layer {
 public:
  AvgPool(models::LayerSpec spec, int64_t c, int64_t kernel, int64_t stride, int64_t pad, int64_t in_h,
          int64_t in_w);
  ~AvgPool() override;
  std::vector<std::vector<int64_t>> input_shapes() const override { return {{c_, in_h_, in_w_}}; }
  std::vector<int64_t> output_sample_shape() const { return {c_, out_h_, out_w_}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  struct Prims;
  Prims& prims(int64_t batch);
  int64_t c_, k_, stride_, pad_, in_h_, in_w_, out_h_, out_w_;
  std::map<int64_t, std::unique_ptr<Prims>> cache_;
};

}  // namespace pw::exec
