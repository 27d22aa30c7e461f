#include "exec/cuda/cnn_kernels.h"
#include "exec/cuda/layers/cnn_layers.h"
#include "models/error.h"

namespace pw::exec::cuda {

CudaPool::CudaPool(std::unique_ptr<Layer> twin, CudaDevice& dev, bool max, const Window2d& w)
    : CudaLayer(std::move(twin), dev), max_(max), w_(w) {
  // The argmax is kept as a float: exact for positions below 2^24.
  if (max_ && w_.in_h * w_.in_w >= (int64_t(1) << 24))
    throw InputError("layer \"" + name() + "\": max_pool maps of " + std::to_string(w_.in_h * w_.in_w) +
                     " positions are too large for the CUDA backend (at most 2^24)");
}

Tensor CudaPool::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  const int64_t batch = x.dim(0);
  Tensor y = make({batch, w_.channels, w_.out_h(), w_.out_w()});
  if (max_) {
    Tensor arg = make(y.shape());
    kernels::max_pool_forward(x.data(), y.data(), arg.data(), w_, batch, stream());
    ctx.saved.push_back(std::move(arg));
  } else {
    kernels::avg_pool_forward(x.data(), y.data(), w_, batch, stream());
  }
  ctx.batch = batch;
  return y;
}

std::vector<Tensor> CudaPool::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Tensor dx = make(x.shape());
  if (max_) kernels::max_pool_backward(grad_out.data(), ctx.saved.at(0).data(), dx.data(), w_, x.dim(0), stream());
  else kernels::avg_pool_backward(grad_out.data(), dx.data(), w_, x.dim(0), stream());
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

}  // namespace pw::exec::cuda
