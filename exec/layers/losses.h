// Loss layers. Inputs: the prediction, then the targets (see exec/layer.h). Output [1].
// softmax_xent (attrs rows, classes): prediction [batch, ..., classes] with rows*classes
//   elements per sample; targets [batch, rows] holding class ids; output = mean over
//   batch*rows of -log softmax(x)[target]. Context: the probabilities.
// mse_loss (attrs dim, optional): prediction and targets [batch, ...] of the same shape;
//   output = mean over all elements of (x - t)^2.
#pragma once

#include "exec/layer.h"

namespace pw::exec {

class SoftmaxXent : public Layer {
 public:
  SoftmaxXent(models::LayerSpec spec, std::vector<int64_t> in_shape, int64_t rows, int64_t classes);
  int num_inputs() const override { return 2; }
  bool is_loss() const override { return true; }
  std::vector<std::vector<int64_t>> input_shapes() const override { return {in_shape_, {rows_}}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  std::vector<int64_t> in_shape_;
  int64_t rows_, classes_;
};

class MseLoss : public Layer {
 public:
  MseLoss(models::LayerSpec spec, std::vector<int64_t> in_shape)
      : Layer(std::move(spec)), in_shape_(std::move(in_shape)) {}
  int num_inputs() const override { return 2; }
  bool is_loss() const override { return true; }
  std::vector<std::vector<int64_t>> input_shapes() const override { return {in_shape_, in_shape_}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  std::vector<int64_t> in_shape_;
};

}  // namespace pw::exec
