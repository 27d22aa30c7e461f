// Parameter-free layers: input (copies the ":data" batch), relu, gelu (tanh approximation, as
// GPT-2), residual_add (sum of two inputs), flatten (reshape to [batch, elements]).
// Their backward reads only the forward inputs (no saved context).
#pragma once

#include "exec/layer.h"

namespace pw::exec {

class InputLayer : public Layer {
 public:
  using Layer::Layer;
  int num_inputs() const override { return 1; }
  std::vector<std::vector<int64_t>> input_shapes() const override { return {spec_.output_shape}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
};

enum class Activation { relu, gelu };

class ActivationLayer : public Layer {
 public:
  ActivationLayer(models::LayerSpec spec, Activation act) : Layer(std::move(spec)), act_(act) {}
  std::vector<std::vector<int64_t>> input_shapes() const override { return {spec_.output_shape}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  Activation act_;
};

// Elementwise kernels used by composite layers too.
void gelu_forward(const float* x, float* y, int64_t n);
// dx = gelu'(x) * dy
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);

class ResidualAdd : public Layer {
 public:
  using Layer::Layer;
  std::vector<std::vector<int64_t>> input_shapes() const override { return {spec_.output_shape, spec_.output_shape}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
};

class Flatten : public Layer {
 public:
  Flatten(models::LayerSpec spec, std::vector<int64_t> in_shape)
      : Layer(std::move(spec)), in_shape_(std::move(in_shape)) {}
  std::vector<std::vector<int64_t>> input_shapes() const override { return {in_shape_}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  std::vector<int64_t> in_shape_;
};

}  // namespace pw::exec
