#include <algorithm>

#include "exec/cuda/cnn_kernels.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/layers/cnn_layers.h"
#include "models/error.h"

namespace pw::exec::cuda {

CudaConv2d::CudaConv2d(std::unique_ptr<Layer> twin, CudaDevice& dev, const ConvGeometry& g, bool bias)
    : CudaLayer(std::move(twin), dev), g_(g), bias_(bias) {
  PW_CHECK(params_.size() == (bias ? 2u : 1u) && params_[0].numel() == g_.weight_numel(), "conv2d twin parameters");
}

Window2d CudaConv2d::window() const {
  Window2d w;
  w.channels = g_.in_c;
  w.in_h = g_.in_h;
  w.in_w = g_.in_w;
  w.kernel = g_.kernel;
  w.stride = g_.stride;
  w.pad = g_.pad;
  return w;
}

Tensor CudaConv2d::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  const int64_t batch = x.dim(0), chunk = conv_chunk_samples(g_, batch), P = g_.pixels();
  Tensor y = make({batch, g_.out_c, g_.out_h(), g_.out_w()});
  Tensor col = make({g_.col_rows() * chunk * P});
  Tensor cf = make({g_.out_c * chunk * P});
  for (int64_t s0 = 0; s0 < batch; s0 += chunk) {
    const int64_t s = std::min(chunk, batch - s0);
    kernels::im2col(x.data() + s0 * g_.in_c * g_.in_h * g_.in_w, col.data(), window(), s, stream());
    gemm(dev_, conv_forward_gemm(g_, s), params_[0].data(), col.data(), cf.data());
    kernels::channels_first_to_nchw(cf.data(), bias_ ? params_[1].data() : nullptr, y.data() + s0 * g_.out_c * P,
                                    g_.out_c, s, P, stream());
  }
  ctx.batch = batch;
  return y;
}

std::vector<Tensor> CudaConv2d::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const int64_t batch = x.dim(0), chunk = conv_chunk_samples(g_, batch), P = g_.pixels();
  Tensor dx = make(x.shape());
  Tensor dcol = make({g_.col_rows() * chunk * P});
  Tensor dcf = make({g_.out_c * chunk * P});
  for (int64_t s0 = 0; s0 < batch; s0 += chunk) {
    const int64_t s = std::min(chunk, batch - s0);
    kernels::nchw_to_channels_first(grad_out.data() + s0 * g_.out_c * P, dcf.data(), g_.out_c, s, P, stream());
    gemm(dev_, conv_data_gemm(g_, s), params_[0].data(), dcf.data(), dcol.data());
    kernels::col2im(dcol.data(), dx.data() + s0 * g_.in_c * g_.in_h * g_.in_w, window(), s, stream());
  }
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

void CudaConv2d::backward_weight(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const int64_t batch = x.dim(0), chunk = conv_chunk_samples(g_, batch), P = g_.pixels();
  Tensor col = make({g_.col_rows() * chunk * P});
  Tensor dcf = make({g_.out_c * chunk * P});
  for (int64_t s0 = 0; s0 < batch; s0 += chunk) {
    const int64_t s = std::min(chunk, batch - s0);
    kernels::im2col(x.data() + s0 * g_.in_c * g_.in_h * g_.in_w, col.data(), window(), s, stream());
    kernels::nchw_to_channels_first(grad_out.data() + s0 * g_.out_c * P, dcf.data(), g_.out_c, s, P, stream());
    gemm(dev_, conv_weight_gemm(g_, s), dcf.data(), col.data(), grads_[0].data(), 1.0f);
    if (bias_) kernels::add_row_sums(dcf.data(), g_.out_c, s * P, grads_[1].data(), stream());
  }
}

}  // namespace pw::exec::cuda
