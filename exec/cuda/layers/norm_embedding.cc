#include "exec/cuda/column_chunks.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/layers/layers.h"
#include "exec/cuda/layers/parts.h"

namespace pw::exec::cuda {

void layer_norm_weight(CudaDevice& dev, const float* x, const float* dy, const float* stats, float* grad_g,
                       float* grad_b, int64_t rows, int64_t d) {
  Tensor scratch = device_scratch(dev, 2 * column_sum_scratch(rows, d));
  kernels::layer_norm_backward_weight(x, dy, stats, grad_g, grad_b, rows, d, scratch.data(), dev.stream());
}

Tensor CudaLayerNorm::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  const int64_t rows = x.numel() / dim_;
  Tensor y = make(x.shape());
  Tensor stats = make({rows, 2});
  kernels::layer_norm_forward(x.data(), params_[0].data(), params_[1].data(), y.data(), stats.data(), rows, dim_,
                              stream());
  ctx.saved.push_back(std::move(stats));
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> CudaLayerNorm::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Tensor dx = make(x.shape());
  kernels::layer_norm_backward_input(x.data(), grad_out.data(), params_[0].data(), ctx.saved.at(0).data(), dx.data(),
                                     x.numel() / dim_, dim_, stream());
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

void CudaLayerNorm::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  layer_norm_weight(dev_, x.data(), grad_out.data(), ctx.saved.at(0).data(), grads_[0].data(), grads_[1].data(),
                    x.numel() / dim_, dim_);
}

Tensor CudaEmbedding::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& ids = *in[0];
  Tensor y = make({ids.dim(0), seq_, d_});
  kernels::embedding_forward(ids.data(), params_[0].data(), params_[1].data(), y.data(), ids.numel(), seq_, d_, vocab_,
                             stream());
  ctx.batch = ids.dim(0);
  return y;
}

std::vector<Tensor> CudaEmbedding::backward_input(Inputs, Context&, const Tensor&) { return std::vector<Tensor>(1); }

void CudaEmbedding::backward_weight(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& ids = *in[0];
  kernels::embedding_backward(ids.data(), grad_out.data(), grads_[0].data(), grads_[1].data(), ids.numel(), seq_, d_,
                              vocab_, stream());
}

}  // namespace pw::exec::cuda
