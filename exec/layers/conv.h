// conv2d (attrs in_c, out_c, kernel, stride, pad, in_h, in_w, bias 0/1, groups) on NCHW
// activations, from oneDNN convolution primitives (created once per micro-batch size and cached
// in the layer). Context: nothing (B reads the weights, W the input). Pooling is in pooling.h.
#pragma once

#include <map>
#include <memory>

#include "exec/layer.h"

namespace pw::exec {

class Conv2d : public Layer {
 public:
  Conv2d(models::LayerSpec spec, int64_t in_c, int64_t out_c, int64_t kernel, int64_t stride, int64_t pad, int64_t in_h,
         int64_t in_w, bool bias = true, int64_t groups = 1);
  ~Conv2d() override;
  std::vector<std::vector<int64_t>> input_shapes() const override { return {{in_c_, in_h_, in_w_}}; }
  std::vector<int64_t> output_sample_shape() const { return {out_c_, out_h_, out_w_}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override;

 private:
  struct Prims;
  Prims& prims(int64_t batch);
  int64_t in_c_, out_c_, k_, stride_, pad_, in_h_, in_w_, out_h_, out_w_;
  bool has_bias_;
  int64_t groups_;
  Tensor weight_, bias_, grad_weight_, grad_bias_;
  std::map<int64_t, std::unique_ptr<Prims>> cache_;
};

}  // namespace pw::exec
