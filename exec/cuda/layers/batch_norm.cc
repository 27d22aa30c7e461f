#include "exec/layers/batch_norm.h"
#include "exec/cuda/cnn_kernels.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/layers/cnn_layers.h"
#include "models/error.h"

namespace pw::exec::cuda {

namespace {
BatchNormShape shape_of(int64_t batch, int64_t c, int64_t spatial, int64_t group) {
  const StatGroups g = stat_groups(batch, group);
  BatchNormShape s;
  s.batch = batch;
  s.c = c;
  s.spatial = spatial;
  s.group = g.size;
  s.groups = g.count;
  return s;
}
}  // namespace

CudaBatchNorm::CudaBatchNorm(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t c, int64_t spatial)
    : CudaLayer(std::move(twin), dev), c_(c), spatial_(spatial) {
  PW_CHECK(params_.size() == 2 && params_[0].numel() == c_, "batch_norm twin parameters");
  running_mean_ = make({c_});
  running_var_ = make({c_});
  init_parameters(0);
}

void CudaBatchNorm::init_parameters(uint64_t seed) {
  CudaLayer::init_parameters(seed);
  running_mean_.fill(0.0f);
  running_var_.fill(1.0f);
}

void CudaBatchNorm::set_statistics_group(int64_t samples) {
  PW_CHECK(samples >= 0, "batch_norm statistics group below 0");
  group_ = samples;
}

Tensor CudaBatchNorm::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  const BatchNormShape s = shape_of(x.dim(0), c_, spatial_, group_);
  Tensor y = make(x.shape());
  Tensor mean = make({s.groups, c_}), var = make({s.groups, c_});
  kernels::batch_norm_stats(x.data(), mean.data(), var.data(), s, stream());
  kernels::batch_norm_forward(x.data(), params_[0].data(), params_[1].data(), mean.data(), var.data(), y.data(), s,
                              stream());
  ctx.saved.push_back(std::move(mean));
  ctx.saved.push_back(std::move(var));
  ctx.batch = x.dim(0);
  return y;
}

void CudaBatchNorm::run_backward(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const BatchNormShape s = shape_of(x.dim(0), c_, spatial_, group_);
  const Tensor& mean = ctx.saved.at(0);
  const Tensor& var = ctx.saved.at(1);
  PW_CHECK(mean.dim(0) == s.groups, "batch_norm: statistics groups changed between forward and backward");
  Tensor part = make({s.groups, 2, c_});
  Tensor dx = make(x.shape());
  Tensor dgb = make({2, c_});
  kernels::batch_norm_backward_reduce(x.data(), grad_out.data(), mean.data(), var.data(), part.data(), s, stream());
  kernels::batch_norm_backward_input(x.data(), grad_out.data(), params_[0].data(), mean.data(), var.data(), part.data(),
                                     dx.data(), s, stream());
  kernels::batch_norm_finish(part.data(), mean.data(), var.data(), dgb.data(), running_mean_.data(),
                             running_var_.data(), BatchNorm::kMomentum, s, stream());
  ctx.saved.resize(4);
  ctx.saved[2] = std::move(dx);
  ctx.saved[3] = std::move(dgb);
}

std::vector<Tensor> CudaBatchNorm::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  if (ctx.saved.size() < 4) run_backward(in, ctx, grad_out);
  std::vector<Tensor> r;
  r.push_back(std::move(ctx.saved[2]));
  if (ctx.saved[3].empty()) ctx.saved.resize(2);  // W already took its part
  return r;
}

void CudaBatchNorm::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  if (ctx.saved.size() < 4) run_backward(in, ctx, grad_out);
  Tensor& dgb = ctx.saved[3];
  kernels::add_into(grads_[0].data(), dgb.data(), c_, stream());
  kernels::add_into(grads_[1].data(), dgb.data() + c_, c_, stream());
  dgb = Tensor();
  if (ctx.saved[2].empty()) ctx.saved.resize(2);  // B already took its part
}

}  // namespace pw::exec::cuda
