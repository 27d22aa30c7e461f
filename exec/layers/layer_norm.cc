#include "exec/layers/layer_norm.h"

#include <cmath>

#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

namespace {
constexpr float kEps = 1e-5f;
}

LayerNorm::LayerNorm(models::LayerSpec spec, std::vector<int64_t> in_shape, int64_t dim)
    : Layer(std::move(spec)), in_shape_(std::move(in_shape)), dim_(dim) {
  if (in_shape_.empty() || in_shape_.back() != dim_)
    throw InputError("layer \"" + name() + "\": layer_norm dim " + std::to_string(dim_) +
                     " does not match the input's last dimension");
  gamma_ = Tensor::zeros({dim_});
  beta_ = Tensor::zeros({dim_});
  grad_gamma_ = Tensor::zeros({dim_});
  grad_beta_ = Tensor::zeros({dim_});
  gamma_.fill(1.0f);
}

void LayerNorm::init_parameters(uint64_t) {
  gamma_.fill(1.0f);
  beta_.fill(0.0f);
}

Tensor LayerNorm::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  const int64_t rows = x.numel() / dim_, d = dim_;
  Tensor y(x.shape());
  Tensor stats({rows, 2});  // mean, rstd
  const float* xp = x.data();
  float* yp = y.data();
  float* sp = stats.data();
  const float* g = gamma_.data();
  const float* b = beta_.data();
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = xp + r * d;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < d; ++i) sum += xr[i];
      const double mean = sum / d;
      for (int64_t i = 0; i < d; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
      const float rstd = static_cast<float>(1.0 / std::sqrt(sq / d + kEps));
      const float m = static_cast<float>(mean);
      float* yr = yp + r * d;
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * rstd * g[i] + b[i];
      sp[2 * r] = m;
      sp[2 * r + 1] = rstd;
    }
  }, 8);
  ctx.saved.push_back(std::move(stats));
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> LayerNorm::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const int64_t rows = x.numel() / dim_, d = dim_;
  Tensor dx(x.shape());
  const float* xp = x.data();
  const float* dy = grad_out.data();
  const float* sp = ctx.saved.at(0).data();
  const float* g = gamma_.data();
  float* dxp = dx.data();
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float m = sp[2 * r], rstd = sp[2 * r + 1];
      const float* xr = xp + r * d;
      const float* dyr = dy + r * d;
      double s1 = 0, s2 = 0;
      for (int64_t i = 0; i < d; ++i) {
        const float xh = (xr[i] - m) * rstd;
        const float dxh = dyr[i] * g[i];
        s1 += dxh;
        s2 += dxh * xh;
      }
      const float a = static_cast<float>(s1 / d), c = static_cast<float>(s2 / d);
      float* o = dxp + r * d;
      for (int64_t i = 0; i < d; ++i) {
        const float xh = (xr[i] - m) * rstd;
        o[i] = rstd * (dyr[i] * g[i] - a - xh * c);
      }
    }
  }, 8);
  std::vector<Tensor> res;
  res.push_back(std::move(dx));
  return res;
}

void LayerNorm::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const int64_t rows = x.numel() / dim_, d = dim_;
  const float* xp = x.data();
  const float* dy = grad_out.data();
  const float* sp = ctx.saved.at(0).data();
  float* gg = grad_gamma_.data();
  float* gb = grad_beta_.data();
  parallel_for(d, [&](int64_t c0, int64_t c1) {
    for (int64_t r = 0; r < rows; ++r) {
      const float m = sp[2 * r], rstd = sp[2 * r + 1];
      const float* xr = xp + r * d;
      const float* dyr = dy + r * d;
      for (int64_t i = c0; i < c1; ++i) {
        gg[i] += dyr[i] * (xr[i] - m) * rstd;
        gb[i] += dyr[i];
      }
    }
  }, 16);
}

}  // namespace pw::exec
