#include "exec/cuda/kernels.h"
#include "exec/cuda/layers/layers.h"
#include "exec/layers/common.h"
#include "models/error.h"

namespace pw::exec::cuda {

namespace {
std::vector<Tensor> one(Tensor t) {
  std::vector<Tensor> r;
  r.push_back(std::move(t));
  return r;
}
}  // namespace

Tensor CudaActivation::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  Tensor y = make(x.shape());
  if (gelu_) kernels::gelu_forward(x.data(), y.data(), x.numel(), stream());
  else kernels::relu_forward(x.data(), y.data(), x.numel(), stream());
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> CudaActivation::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Tensor dx = make(x.shape());
  if (gelu_) kernels::gelu_backward(x.data(), grad_out.data(), dx.data(), x.numel(), stream());
  else kernels::relu_backward(x.data(), grad_out.data(), dx.data(), x.numel(), stream());
  return one(std::move(dx));
}

Tensor CudaPassThrough::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  Tensor y;
  switch (kind_) {
    case Kind::input: y = x.clone(); break;
    case Kind::residual_add:
      if (in[1]->dim(0) != x.dim(0)) throw InputError("layer \"" + name() + "\": inputs have different batch sizes");
      y = make(x.shape());
      kernels::add(x.data(), in[1]->data(), y.data(), x.numel(), stream());
      break;
    case Kind::flatten:
      y = x.clone();
      y.reshape({y.dim(0), y.numel() / y.dim(0)});
      break;
  }
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> CudaPassThrough::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  std::vector<Tensor> r;
  switch (kind_) {
    case Kind::input: r.resize(1); break;
    case Kind::residual_add:
      r.push_back(grad_out.clone());
      r.push_back(grad_out.clone());
      break;
    case Kind::flatten: {
      Tensor dx = grad_out.clone();
      dx.reshape(in[0]->shape());
      r.push_back(std::move(dx));
      break;
    }
  }
  return r;
}

Tensor CudaDropout::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  const int64_t batch = x.dim(0), per = x.numel() / batch;
  const double p = static_cast<double>(permille_) / 1000.0;
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  Tensor mask = make(x.shape()), y = make(x.shape());
  const uint64_t step_seed = mix_seed(seed_, static_cast<uint64_t>(ctx.step) + 1);
  kernels::dropout_forward(x.data(), mask.data(), y.data(), batch, per, step_seed, ctx.first_sample, p, keep, stream());
  ctx.saved.push_back(std::move(mask));
  ctx.batch = batch;
  return y;
}

std::vector<Tensor> CudaDropout::backward_input(Inputs, Context& ctx, const Tensor& grad_out) {
  Tensor dx = make(grad_out.shape());
  kernels::mul(grad_out.data(), ctx.saved.at(0).data(), dx.data(), dx.numel(), stream());
  return one(std::move(dx));
}

}  // namespace pw::exec::cuda
