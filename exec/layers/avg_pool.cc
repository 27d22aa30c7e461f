#include "exec/layers/avg_pool.h"

#include "exec/dnnl_util.h"
#include "models/error.h"

namespace pw::exec {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {
memory mem(const memory::desc& d, const float* p) { return memory(d, cpu_engine(), const_cast<float*>(p)); }
}  // namespace

struct AvgPool::Prims {
  memory::desc src, dst;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward bwd;
};

AvgPool::AvgPool(models::LayerSpec spec, int64_t c, int64_t kernel, int64_t stride, int64_t pad, int64_t in_h,
                 int64_t in_w)
    : Layer(std::move(spec)), c_(c), k_(kernel), stride_(stride), pad_(pad), in_h_(in_h), in_w_(in_w) {
  if (c < 1 || kernel < 1 || stride < 1 || pad < 0 || pad >= kernel || in_h + 2 * pad < kernel ||
      in_w + 2 * pad < kernel)
    throw InputError("layer \"" + name() + "\": invalid avg_pool attributes");
  out_h_ = (in_h + 2 * pad - kernel) / stride + 1;
  out_w_ = (in_w + 2 * pad - kernel) / stride + 1;
}

AvgPool::~AvgPool() = default;

AvgPool::Prims& AvgPool::prims(int64_t batch) {
  auto it = cache_.find(batch);
  if (it != cache_.end()) return *it->second;
  auto p = std::make_unique<Prims>();
  p->src = memory::desc({batch, c_, in_h_, in_w_}, dt::f32, tag::nchw);
  p->dst = memory::desc({batch, c_, out_h_, out_w_}, dt::f32, tag::nchw);
  const memory::dims strides{stride_, stride_}, kernel{k_, k_}, pads{pad_, pad_};
  const auto alg = dnnl::algorithm::pooling_avg_include_padding;
  auto& eng = cpu_engine();
  dnnl::pooling_forward::primitive_desc fpd(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, alg, p->src, p->dst, strides, kernel, pads, pads),
      eng);
  dnnl::pooling_backward::primitive_desc bpd(
      dnnl::pooling_backward::desc(alg, p->src, p->dst, strides, kernel, pads, pads), eng, fpd);
  p->fwd = dnnl::pooling_forward(fpd);
  p->bwd = dnnl::pooling_backward(bpd);
  return *cache_.emplace(batch, std::move(p)).first->second;
}

Tensor AvgPool::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  Prims& p = prims(x.dim(0));
  Tensor y({x.dim(0), c_, out_h_, out_w_});
  p.fwd.execute(cpu_stream(), {{DNNL_ARG_SRC, mem(p.src, x.data())}, {DNNL_ARG_DST, mem(p.dst, y.data())}});
  cpu_stream().wait();
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> AvgPool::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Prims& p = prims(x.dim(0));
  Tensor dx(x.shape());
  p.bwd.execute(cpu_stream(),
                {{DNNL_ARG_DIFF_DST, mem(p.dst, grad_out.data())}, {DNNL_ARG_DIFF_SRC, mem(p.src, dx.data())}});
  cpu_stream().wait();
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

}  // namespace pw::exec
