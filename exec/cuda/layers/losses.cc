#include "exec/cuda/kernels.h"
#include "exec/cuda/layers/layers.h"
#include "models/error.h"

namespace pw::exec::cuda {

Tensor CudaLoss::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  const Tensor& t = *in[1];
  check_input(x, 0);
  check_device(x, 0);
  check_device(t, 1);
  Tensor loss = make({1});
  if (xent_) {
    if (t.numel() != x.dim(0) * rows_)
      throw InputError("layer \"" + name() + "\": targets " + t.shape_string() + " do not match " +
                       std::to_string(x.dim(0)) + "x" + std::to_string(rows_) + " rows");
    const int64_t n = x.dim(0) * rows_;
    Tensor stats = make({n, 2});
    // Per-row losses in double: a scratch buffer of n doubles (2n floats).
    Tensor row_loss = make({2 * n});
    kernels::softmax_xent_forward(x.data(), t.data(), stats.data(), reinterpret_cast<double*>(row_loss.data()),
                                  loss.data(), n, classes_, stream());
    ctx.saved.push_back(std::move(stats));
  } else {
    if (t.shape() != x.shape())
      throw InputError("layer \"" + name() + "\": targets " + t.shape_string() + " do not match the prediction " +
                       x.shape_string());
    kernels::mse_forward(x.data(), t.data(), loss.data(), x.numel(), stream());
  }
  ctx.batch = x.dim(0);
  return loss;
}

std::vector<Tensor> CudaLoss::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const Tensor& t = *in[1];
  Tensor dx = make(x.shape());
  if (xent_)
    kernels::softmax_xent_backward(x.data(), t.data(), ctx.saved.at(0).data(), grad_out.data(), dx.data(),
                                   x.dim(0) * rows_, classes_, stream());
  else kernels::mse_backward(x.data(), t.data(), grad_out.data(), dx.data(), x.numel(), stream());
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  r.emplace_back();
  return r;
}

}  // namespace pw::exec::cuda
