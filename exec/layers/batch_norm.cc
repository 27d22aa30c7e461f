#include "exec/layers/batch_norm.h"

#include <algorithm>

#include "exec/dnnl_util.h"
#include "exec/layers/common.h"
#include "models/error.h"

namespace pw::exec {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct BatchNorm::Prims {
  memory::desc data, stat, scale;
  dnnl::batch_normalization_forward fwd;
  dnnl::batch_normalization_backward bwd;
};

BatchNorm::BatchNorm(models::LayerSpec spec, std::vector<int64_t> in_shape)
    : Layer(std::move(spec)), in_shape_(std::move(in_shape)) {
  if (in_shape_.empty() || in_shape_.size() > 3)
    throw InputError("layer \"" + name() + "\": batch_norm expects a [c], [c, w] or [c, h, w] input");
  c_ = in_shape_[0];
  spatial_ = 1;
  for (size_t i = 1; i < in_shape_.size(); ++i) spatial_ *= in_shape_[i];
  gamma_ = Tensor::zeros({c_});
  beta_ = Tensor::zeros({c_});
  grad_gamma_ = Tensor::zeros({c_});
  grad_beta_ = Tensor::zeros({c_});
  running_mean_ = Tensor::zeros({c_});
  running_var_ = Tensor::zeros({c_});
  register_parameter(&gamma_, &grad_gamma_);
  register_parameter(&beta_, &grad_beta_);
  init_parameters(0);
}

BatchNorm::~BatchNorm() = default;

void BatchNorm::init_parameters(uint64_t) {
  gamma_.fill(1.0f);
  beta_.fill(0.0f);
  running_mean_.fill(0.0f);
  running_var_.fill(1.0f);
}

BatchNorm::Prims& BatchNorm::prims(int64_t batch) {
  auto it = cache_.find(batch);
  if (it != cache_.end()) return *it->second;
  auto p = std::make_unique<Prims>();
  // Any per-sample layout [c, spatial...] is NCHW with h = spatial, w = 1.
  p->data = memory::desc({batch, c_, spatial_, 1}, dt::f32, tag::nchw);
  p->stat = memory::desc({c_}, dt::f32, tag::x);
  p->scale = p->stat;
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  auto& eng = cpu_engine();
  dnnl::batch_normalization_forward::primitive_desc fpd(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, p->data, kEps, flags), eng);
  dnnl::batch_normalization_backward::primitive_desc bpd(
      dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, p->data, p->data, kEps, flags), eng, fpd);
  p->fwd = dnnl::batch_normalization_forward(fpd);
  p->bwd = dnnl::batch_normalization_backward(bpd);
  return *cache_.emplace(batch, std::move(p)).first->second;
}

Tensor BatchNorm::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  const int64_t n = x.dim(0), g = group_ > 0 ? std::min(group_, n) : n;
  const int64_t groups = (n + g - 1) / g, per_sample = c_ * spatial_;
  Tensor y(x.shape());
  Tensor mean({groups, c_}), var({groups, c_});
  for (int64_t k = 0; k < groups; ++k) {
    const int64_t first = k * g, count = std::min(g, n - first);
    Prims& p = prims(count);
    p.fwd.execute(cpu_stream(), {{DNNL_ARG_SRC, cpu_memory(p.data, x.data() + first * per_sample)},
                                 {DNNL_ARG_DST, cpu_memory(p.data, y.data() + first * per_sample)},
                                 {DNNL_ARG_MEAN, cpu_memory(p.stat, mean.data() + k * c_)},
                                 {DNNL_ARG_VARIANCE, cpu_memory(p.stat, var.data() + k * c_)},
                                 {DNNL_ARG_SCALE, cpu_memory(p.scale, gamma_.data())},
                                 {DNNL_ARG_SHIFT, cpu_memory(p.scale, beta_.data())}});
  }
  cpu_stream().wait();
  ctx.saved.push_back(std::move(mean));
  ctx.saved.push_back(std::move(var));
  ctx.batch = n;
  return y;
}

void BatchNorm::run_backward(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const int64_t n = x.dim(0), g = group_ > 0 ? std::min(group_, n) : n;
  const int64_t groups = (n + g - 1) / g, per_sample = c_ * spatial_;
  const Tensor& mean = ctx.saved.at(0);
  const Tensor& var = ctx.saved.at(1);
  Tensor dx(x.shape());
  Tensor dgb = Tensor::zeros({2, c_});
  Tensor part({2, c_});
  for (int64_t k = 0; k < groups; ++k) {
    const int64_t first = k * g, count = std::min(g, n - first);
    Prims& p = prims(count);
    p.bwd.execute(cpu_stream(), {{DNNL_ARG_SRC, cpu_memory(p.data, x.data() + first * per_sample)},
                                 {DNNL_ARG_DIFF_DST, cpu_memory(p.data, grad_out.data() + first * per_sample)},
                                 {DNNL_ARG_MEAN, cpu_memory(p.stat, mean.data() + k * c_)},
                                 {DNNL_ARG_VARIANCE, cpu_memory(p.stat, var.data() + k * c_)},
                                 {DNNL_ARG_SCALE, cpu_memory(p.scale, gamma_.data())},
                                 {DNNL_ARG_SHIFT, cpu_memory(p.scale, beta_.data())},
                                 {DNNL_ARG_DIFF_SRC, cpu_memory(p.data, dx.data() + first * per_sample)},
                                 {DNNL_ARG_DIFF_SCALE, cpu_memory(p.scale, part.data())},
                                 {DNNL_ARG_DIFF_SHIFT, cpu_memory(p.scale, part.data() + c_)}});
    cpu_stream().wait();
    add_into(dgb.data(), part.data(), 2 * c_);
    // Running statistics: once per micro-batch (here, the first of B / W to run).
    const double m = static_cast<double>(count * spatial_);
    const float unbias = m > 1 ? static_cast<float>(m / (m - 1)) : 1.0f;
    for (int64_t ch = 0; ch < c_; ++ch) {
      running_mean_.data()[ch] = (1 - kMomentum) * running_mean_.data()[ch] + kMomentum * mean.data()[k * c_ + ch];
      running_var_.data()[ch] =
          (1 - kMomentum) * running_var_.data()[ch] + kMomentum * unbias * var.data()[k * c_ + ch];
    }
  }
  ctx.saved.resize(4);
  ctx.saved[2] = std::move(dx);
  ctx.saved[3] = std::move(dgb);
}

std::vector<Tensor> BatchNorm::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  if (ctx.saved.size() < 4) run_backward(in, ctx, grad_out);
  std::vector<Tensor> r;
  r.push_back(std::move(ctx.saved[2]));
  if (ctx.saved[3].empty()) ctx.saved.resize(2);  // W already took its part
  return r;
}

void BatchNorm::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  if (ctx.saved.size() < 4) run_backward(in, ctx, grad_out);
  Tensor& dgb = ctx.saved[3];
  add_into(grad_gamma_.data(), dgb.data(), c_);
  add_into(grad_beta_.data(), dgb.data() + c_, c_);
  dgb = Tensor();
  if (ctx.saved[2].empty()) ctx.saved.resize(2);  // B already took its part
}

}  // namespace pw::exec
