#include "exec/layers/elementwise.h"

#include <cmath>
#include <cstring>

#include "exec/dnnl_util.h"
#include "exec/layers/common.h"
#include "exec/parallel.h"

namespace pw::exec {

namespace {
constexpr int64_t kGrain = 4096;
std::vector<Tensor> one(Tensor t) {
  std::vector<Tensor> r;
  r.push_back(std::move(t));
  return r;
}
}  // namespace

Tensor InputLayer::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_input(*in[0], 0);
  ctx.batch = in[0]->dim(0);
  return in[0]->clone();
}

std::vector<Tensor> InputLayer::backward_input(Inputs, Context&, const Tensor&) {
  std::vector<Tensor> r(1);
  return r;
}

void gelu_forward(const float* x, float* y, int64_t n) { gelu_tanh_forward(x, y, n); }

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) { gelu_tanh_backward(x, dy, dx, n); }

Tensor ActivationLayer::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  Tensor y(x.shape());
  if (act_ == Activation::gelu) {
    gelu_forward(x.data(), y.data(), x.numel());
  } else {
    const float* xp = x.data();
    float* yp = y.data();
    parallel_for(
        x.numel(),
        [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) yp[i] = xp[i] > 0.0f ? xp[i] : 0.0f;
        },
        kGrain);
  }
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> ActivationLayer::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Tensor dx(x.shape());
  if (act_ == Activation::gelu) {
    gelu_backward(x.data(), grad_out.data(), dx.data(), x.numel());
  } else {
    const float* xp = x.data();
    const float* g = grad_out.data();
    float* d = dx.data();
    parallel_for(
        x.numel(),
        [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) d[i] = xp[i] > 0.0f ? g[i] : 0.0f;
        },
        kGrain);
  }
  return one(std::move(dx));
}

Tensor ResidualAdd::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_input(*in[0], 0);
  check_input(*in[1], 1);
  if (in[0]->dim(0) != in[1]->dim(0)) throw InputError("layer \"" + name() + "\": inputs have different batch sizes");
  Tensor y = in[0]->clone();
  add_into(y.data(), in[1]->data(), y.numel());
  ctx.batch = y.dim(0);
  return y;
}

std::vector<Tensor> ResidualAdd::backward_input(Inputs, Context&, const Tensor& grad_out) {
  std::vector<Tensor> r;
  r.push_back(grad_out.clone());
  r.push_back(grad_out.clone());
  return r;
}

Tensor Flatten::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_input(*in[0], 0);
  Tensor y = in[0]->clone();
  y.reshape({y.dim(0), y.numel() / y.dim(0)});
  ctx.batch = y.dim(0);
  return y;
}

std::vector<Tensor> Flatten::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  Tensor dx = grad_out.clone();
  dx.reshape(in[0]->shape());
  return one(std::move(dx));
}

}  // namespace pw::exec
