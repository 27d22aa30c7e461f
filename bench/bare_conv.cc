#include "bench/bare_conv.h"

#include "exec/dnnl_util.h"

namespace pw::exec {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct BareConv::Impl {
  memory::desc src, dst, wei, bias;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
};

BareConv::BareConv(int64_t batch, int64_t in_c, int64_t out_c, int64_t k, int64_t stride, int64_t pad, int64_t h,
                   int64_t w)
    : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  p.src = memory::desc({batch, in_c, h, w}, dt::f32, tag::nchw);
  p.dst = memory::desc({batch, out_c, oh, ow}, dt::f32, tag::nchw);
  p.wei = memory::desc({out_c, in_c, k, k}, dt::f32, tag::oihw);
  p.bias = memory::desc({out_c}, dt::f32, tag::x);
  const memory::dims strides{stride, stride}, pads{pad, pad};
  auto& eng = cpu_engine();
  const auto alg = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::primitive_desc fpd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, p.src, p.wei, p.bias, p.dst, strides,
                                      pads, pads),
      eng);
  dnnl::convolution_backward_data::primitive_desc dpd(
      dnnl::convolution_backward_data::desc(alg, p.src, p.wei, p.dst, strides, pads, pads), eng, fpd);
  dnnl::convolution_backward_weights::primitive_desc wpd(
      dnnl::convolution_backward_weights::desc(alg, p.src, p.wei, p.bias, p.dst, strides, pads, pads), eng, fpd);
  p.fwd = dnnl::convolution_forward(fpd);
  p.bwd_data = dnnl::convolution_backward_data(dpd);
  p.bwd_weights = dnnl::convolution_backward_weights(wpd);
}

BareConv::~BareConv() = default;

void BareConv::forward(const float* x, const float* weight, const float* bias, float* y) {
  Impl& p = *impl_;
  run_primitive(p.fwd, {{DNNL_ARG_SRC, cpu_memory(p.src, x)},
                        {DNNL_ARG_WEIGHTS, cpu_memory(p.wei, weight)},
                        {DNNL_ARG_BIAS, cpu_memory(p.bias, bias)},
                        {DNNL_ARG_DST, cpu_memory(p.dst, y)}});
}

void BareConv::backward_data(const float* dy, const float* weight, float* dx) {
  Impl& p = *impl_;
  run_primitive(p.bwd_data, {{DNNL_ARG_DIFF_DST, cpu_memory(p.dst, dy)},
                             {DNNL_ARG_WEIGHTS, cpu_memory(p.wei, weight)},
                             {DNNL_ARG_DIFF_SRC, cpu_memory(p.src, dx)}});
}

void BareConv::backward_weights(const float* x, const float* dy, float* dweight, float* dbias) {
  Impl& p = *impl_;
  run_primitive(p.bwd_weights, {{DNNL_ARG_SRC, cpu_memory(p.src, x)},
                                {DNNL_ARG_DIFF_DST, cpu_memory(p.dst, dy)},
                                {DNNL_ARG_DIFF_WEIGHTS, cpu_memory(p.wei, dweight)},
                                {DNNL_ARG_DIFF_BIAS, cpu_memory(p.bias, dbias)}});
}

}  // namespace pw::exec
