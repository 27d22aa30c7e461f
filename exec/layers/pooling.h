// max_pool and avg_pool (attrs c, kernel, stride (default kernel), pad (default 0), in_h, in_w)
// on NCHW activations, from oneDNN's pooling primitives (created once per micro-batch size and
// cached in the layer). Square windows; the output is [c, out_h, out_w] with
// out = (in + 2 * pad - kernel) / stride + 1.
// - max: context = oneDNN's workspace (the argmax positions), kept as a float tensor of enough
//   bytes, which B reads.
// - avg: average including padding (torchvision's AvgPool2d); global average pooling is
//   kernel = in_h = in_w (output [c, 1, 1]). No context.
#pragma once

#include <map>
#include <memory>

#include "exec/layer.h"

namespace pw::exec {

enum class PoolKind { max, avg };

class Pool : public Layer {
 public:
  // Throws InputError naming the layer when the window does not fit the input.
  Pool(models::LayerSpec spec, PoolKind kind, int64_t c, int64_t kernel, int64_t stride, int64_t pad, int64_t in_h,
       int64_t in_w);
  ~Pool() override;
  std::vector<std::vector<int64_t>> input_shapes() const override { return {{c_, in_h_, in_w_}}; }
  std::vector<int64_t> output_sample_shape() const { return {c_, out_h_, out_w_}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  struct Prims;
  Prims& prims(int64_t batch);
  PoolKind kind_;
  int64_t c_, k_, stride_, pad_, in_h_, in_w_, out_h_, out_w_;
  std::map<int64_t, std::unique_ptr<Prims>> cache_;
};

}  // namespace pw::exec
