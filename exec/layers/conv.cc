#include "exec/layers/conv.h"

#include <cmath>
#include <cstring>

#include "exec/dnnl_util.h"
#include "exec/layers/common.h"
#include "models/error.h"

namespace pw::exec {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Scratchpads are the layer's own (scratchpad_mode::user): oneDNN's per-thread global
// scratchpad was seen to hand a null buffer to a gemm convolution re-run for recomputation.
struct Conv2d::Prims {
  memory::desc src, dst, wei, bias;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  memory scratch_fwd, scratch_data, scratch_weights;
};

Conv2d::Conv2d(models::LayerSpec spec, int64_t in_c, int64_t out_c, int64_t kernel, int64_t stride, int64_t pad,
               int64_t in_h, int64_t in_w, bool bias, int64_t groups)
    : Layer(std::move(spec)),
      in_c_(in_c),
      out_c_(out_c),
      k_(kernel),
      stride_(stride),
      pad_(pad),
      in_h_(in_h),
      in_w_(in_w),
      has_bias_(bias),
      groups_(groups) {
  if (in_c < 1 || out_c < 1 || kernel < 1 || stride < 1 || pad < 0 || in_h + 2 * pad < kernel ||
      in_w + 2 * pad < kernel)
    throw InputError("layer \"" + name() + "\": invalid conv2d attributes");
  if (groups < 1 || in_c % groups != 0 || out_c % groups != 0)
    throw InputError("layer \"" + name() + "\": conv2d groups " + std::to_string(groups) + " must divide in_c " +
                     std::to_string(in_c) + " and out_c " + std::to_string(out_c));
  out_h_ = (in_h + 2 * pad - kernel) / stride + 1;
  out_w_ = (in_w + 2 * pad - kernel) / stride + 1;
  weight_ = Tensor::zeros({out_c, in_c / groups, kernel, kernel});
  grad_weight_ = Tensor::zeros({out_c, in_c / groups, kernel, kernel});
  bias_ = Tensor::zeros({out_c});
  grad_bias_ = Tensor::zeros({out_c});
  register_parameter(&weight_, &grad_weight_);
  if (has_bias_) register_parameter(&bias_, &grad_bias_);
}

Conv2d::~Conv2d() = default;

void Conv2d::init_parameters(uint64_t seed) {
  Rng rng(seed);
  fill_normal(weight_, rng, std::sqrt(2.0 / static_cast<double>(in_c_ / groups_ * k_ * k_)));
  bias_.fill(0.0f);
}

Conv2d::Prims& Conv2d::prims(int64_t batch) {
  auto it = cache_.find(batch);
  if (it != cache_.end()) return *it->second;
  auto p = std::make_unique<Prims>();
  p->src = memory::desc({batch, in_c_, in_h_, in_w_}, dt::f32, tag::nchw);
  p->dst = memory::desc({batch, out_c_, out_h_, out_w_}, dt::f32, tag::nchw);
  // [out_c, in_c / g, k, k] row-major is oneDNN's goihw with g leading groups of out_c / g.
  p->wei = groups_ == 1 ? memory::desc({out_c_, in_c_, k_, k_}, dt::f32, tag::oihw)
                        : memory::desc({groups_, out_c_ / groups_, in_c_ / groups_, k_, k_}, dt::f32, tag::goihw);
  p->bias = memory::desc({out_c_}, dt::f32, tag::x);
  const memory::dims strides{stride_, stride_}, pads{pad_, pad_};
  auto& eng = cpu_engine();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::primitive_desc fpd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, p->src,
                                      p->wei, p->bias, p->dst, strides, pads, pads),
      attr, eng);
  dnnl::convolution_backward_data::primitive_desc dpd(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, p->src, p->wei, p->dst, strides, pads,
                                            pads),
      attr, eng, fpd);
  dnnl::convolution_backward_weights::primitive_desc wpd(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, p->src, p->wei, p->bias, p->dst,
                                               strides, pads, pads),
      attr, eng, fpd);
  p->fwd = dnnl::convolution_forward(fpd);
  p->bwd_data = dnnl::convolution_backward_data(dpd);
  p->bwd_weights = dnnl::convolution_backward_weights(wpd);
  p->scratch_fwd = memory(fpd.scratchpad_desc(), eng);
  p->scratch_data = memory(dpd.scratchpad_desc(), eng);
  p->scratch_weights = memory(wpd.scratchpad_desc(), eng);
  return *cache_.emplace(batch, std::move(p)).first->second;
}

Tensor Conv2d::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  Prims& p = prims(x.dim(0));
  Tensor y({x.dim(0), out_c_, out_h_, out_w_});
  run_primitive(p.fwd, {{DNNL_ARG_SRC, cpu_memory(p.src, x.data())},
                        {DNNL_ARG_WEIGHTS, cpu_memory(p.wei, weight_.data())},
                        {DNNL_ARG_BIAS, cpu_memory(p.bias, bias_.data())},
                        {DNNL_ARG_DST, cpu_memory(p.dst, y.data())},
                        {DNNL_ARG_SCRATCHPAD, p.scratch_fwd}});
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> Conv2d::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Prims& p = prims(x.dim(0));
  Tensor dx(x.shape());
  run_primitive(p.bwd_data, {{DNNL_ARG_DIFF_DST, cpu_memory(p.dst, grad_out.data())},
                             {DNNL_ARG_WEIGHTS, cpu_memory(p.wei, weight_.data())},
                             {DNNL_ARG_DIFF_SRC, cpu_memory(p.src, dx.data())},
                             {DNNL_ARG_SCRATCHPAD, p.scratch_data}});
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

void Conv2d::backward_weight(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Prims& p = prims(x.dim(0));
  Tensor dw(weight_.shape()), db(bias_.shape());
  run_primitive(p.bwd_weights, {{DNNL_ARG_SRC, cpu_memory(p.src, x.data())},
                                {DNNL_ARG_DIFF_DST, cpu_memory(p.dst, grad_out.data())},
                                {DNNL_ARG_DIFF_WEIGHTS, cpu_memory(p.wei, dw.data())},
                                {DNNL_ARG_DIFF_BIAS, cpu_memory(p.bias, db.data())},
                                {DNNL_ARG_SCRATCHPAD, p.scratch_weights}});
  add_into(grad_weight_.data(), dw.data(), dw.numel());
  if (has_bias_) add_into(grad_bias_.data(), db.data(), db.numel());
}

}  // namespace pw::exec
