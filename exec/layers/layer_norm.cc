#include "exec/layers/layer_norm.h"
#include "exec/layers/vector_clones.h"

#include <cmath>

#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

namespace {
constexpr float kEps = 1e-5f;
constexpr int kNormLanes = 16;  // partial sums per row (one AVX-512 register); vectorizable without -ffast-math

// Row kernels, built for AVX-512, AVX2 and baseline x86-64 with runtime dispatch.
PW_VECTOR_CLONES
void norm_row(const float* x, const float* g, const float* b, float* y, int64_t d, float* stats) {
  float acc[kNormLanes] = {};
  int64_t i = 0;
  for (; i + kNormLanes <= d; i += kNormLanes)
    for (int k = 0; k < kNormLanes; ++k) acc[k] += x[i + k];
  float sum = 0.0f;
  for (; i < d; ++i) sum += x[i];
  for (int k = 0; k < kNormLanes; ++k) sum += acc[k];
  const float m = sum / static_cast<float>(d);
  float sq[kNormLanes] = {};
  for (i = 0; i + kNormLanes <= d; i += kNormLanes)
    for (int k = 0; k < kNormLanes; ++k) sq[k] += (x[i + k] - m) * (x[i + k] - m);
  float var = 0.0f;
  for (; i < d; ++i) var += (x[i] - m) * (x[i] - m);
  for (int k = 0; k < kNormLanes; ++k) var += sq[k];
  const float rstd = 1.0f / std::sqrt(var / static_cast<float>(d) + kEps);
  for (i = 0; i < d; ++i) y[i] = (x[i] - m) * rstd * g[i] + b[i];
  stats[0] = m;
  stats[1] = rstd;
}

PW_VECTOR_CLONES
void norm_backward_row(const float* x, const float* dy, const float* g, float m, float rstd, int64_t d, float* dx) {
  float a1[kNormLanes] = {}, a2[kNormLanes] = {};
  int64_t i = 0;
  for (; i + kNormLanes <= d; i += kNormLanes)
    for (int k = 0; k < kNormLanes; ++k) {
      const float dxh = dy[i + k] * g[i + k];
      a1[k] += dxh;
      a2[k] += dxh * (x[i + k] - m) * rstd;
    }
  float s1 = 0.0f, s2 = 0.0f;
  for (; i < d; ++i) {
    const float dxh = dy[i] * g[i];
    s1 += dxh;
    s2 += dxh * (x[i] - m) * rstd;
  }
  for (int k = 0; k < kNormLanes; ++k) {
    s1 += a1[k];
    s2 += a2[k];
  }
  const float a = s1 / static_cast<float>(d), c = s2 / static_cast<float>(d);
  for (i = 0; i < d; ++i) dx[i] = rstd * (dy[i] * g[i] - a - (x[i] - m) * rstd * c);
}

PW_VECTOR_CLONES
void norm_weight_rows(const float* x, const float* dy, const float* stats, int64_t rows, int64_t d, int64_t c0,
                      int64_t c1, float* gg, float* gb) {
  for (int64_t r = 0; r < rows; ++r) {
    const float m = stats[2 * r], rstd = stats[2 * r + 1];
    const float* xr = x + r * d;
    const float* dyr = dy + r * d;
    for (int64_t i = c0; i < c1; ++i) {
      gg[i] += dyr[i] * (xr[i] - m) * rstd;
      gb[i] += dyr[i];
    }
  }
}
}  // namespace

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
  register_parameter(&gamma_, &grad_gamma_);
  register_parameter(&beta_, &grad_beta_);
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
  parallel_for(
      rows,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) norm_row(xp + r * d, g, b, yp + r * d, d, sp + 2 * r);
      },
      8);
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
  parallel_for(
      rows,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          norm_backward_row(xp + r * d, dy + r * d, g, sp[2 * r], sp[2 * r + 1], d, dxp + r * d);
      },
      8);
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
  parallel_for(
      d, [&](int64_t c0, int64_t c1) { norm_weight_rows(xp, dy, sp, rows, d, c0, c1, gg, gb); }, 16);
}

}  // namespace pw::exec
