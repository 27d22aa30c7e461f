#include "exec/cuda/column_chunks.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/layers/layers.h"
#include "exec/cuda/layers/parts.h"
#include "models/error.h"

namespace pw::exec::cuda {

void linear_forward(CudaDevice& dev, const float* x, const float* w, const float* bias, float* y, int64_t rows,
                    int64_t in, int64_t out) {
  GemmShape s;
  s.m = rows;
  s.n = out;
  s.k = in;
  s.trans_b = true;  // w stored [out, in]
  gemm(dev, s, x, w, y, 0.0f, bias ? Epilogue::bias : Epilogue::none, bias);
}

void linear_backward_input(CudaDevice& dev, const float* dy, const float* w, float* dx, int64_t rows, int64_t in,
                           int64_t out) {
  GemmShape s;
  s.m = rows;
  s.n = in;
  s.k = out;
  gemm(dev, s, dy, w, dx);
}

void linear_backward_weight(CudaDevice& dev, const float* x, const float* dy, float* gw, float* gbias, int64_t rows,
                            int64_t in, int64_t out) {
  GemmShape s;
  s.m = out;
  s.n = in;
  s.k = rows;
  s.trans_a = true;  // dy stored [rows, out]
  gemm(dev, s, dy, x, gw, 1.0f);
  if (!gbias) return;
  Tensor scratch = device_scratch(dev, column_sum_scratch(rows, out));
  kernels::add_column_sums(dy, rows, out, gbias, scratch.data(), dev.stream());
}

Tensor device_scratch(CudaDevice& dev, int64_t n) { return n > 0 ? Tensor({n}, dev.memory()) : Tensor(); }

CudaLinear::CudaLinear(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t in, int64_t out, bool bias)
    : CudaLayer(std::move(twin), dev), in_(in), out_(out), bias_(bias) {
  PW_CHECK(params_.size() == (bias ? 2u : 1u), "linear twin parameters");
  w_ = &params_[0];
  gw_ = &grads_[0];
}

Tensor CudaLinear::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  std::vector<int64_t> shape = x.shape();
  shape.back() = out_;
  Tensor y = make(shape);
  linear_forward(dev_, x.data(), w_->data(), bias_ ? params_[1].data() : nullptr, y.data(), x.numel() / in_, in_, out_);
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> CudaLinear::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Tensor dx = make(x.shape());
  linear_backward_input(dev_, grad_out.data(), w_->data(), dx.data(), x.numel() / in_, in_, out_);
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

void CudaLinear::backward_weight(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  linear_backward_weight(dev_, x.data(), grad_out.data(), gw_->data(), bias_ ? grads_[1].data() : nullptr,
                         x.numel() / in_, in_, out_);
}

std::vector<Tensor*> CudaLinear::parameters() {
  std::vector<Tensor*> p;
  if (!tied_) p.push_back(&params_[0]);
  if (bias_) p.push_back(&params_[1]);
  return p;
}

std::vector<Tensor*> CudaLinear::gradients() {
  std::vector<Tensor*> g;
  if (!tied_) g.push_back(&grads_[0]);
  if (bias_) g.push_back(&grads_[1]);
  return g;
}

void CudaLinear::init_parameters(uint64_t seed) {
  if (!tied_) {
    CudaLayer::init_parameters(seed);
    return;
  }
  twin_->init_parameters(seed);  // a tied head's only parameter is the bias, if any
  if (bias_) upload(twin_->parameters().back()->data(), params_[1]);
}

void CudaLinear::share_weight(Tensor* weight, Tensor* grad) {
  PW_CHECK(weight->shape() == (std::vector<int64_t>{out_, in_}), "tied weight shape mismatch");
  PW_CHECK(weight->device() == dev_.device() && grad->device() == dev_.device(), "tied weight on another device");
  w_ = weight;
  gw_ = grad;
  tied_ = true;
  params_[0] = Tensor();
  grads_[0] = Tensor();
}

}  // namespace pw::exec::cuda
