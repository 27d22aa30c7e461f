#include "exec/layers/pooling.h"

#include <algorithm>
#include <unordered_map>

#include "exec/dnnl_util.h"
#include "models/error.h"

namespace pw::exec {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {
dnnl::algorithm algorithm(PoolKind kind) {
  return kind == PoolKind::max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
}
}  // namespace

struct Pool::Prims {
  memory::desc src, dst, ws;  // ws: max pooling's workspace (empty for avg)
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward bwd;
};

Pool::Pool(models::LayerSpec spec, PoolKind kind, int64_t c, int64_t kernel, int64_t stride, int64_t pad, int64_t in_h,
           int64_t in_w)
    : Layer(std::move(spec)), kind_(kind), c_(c), k_(kernel), stride_(stride), pad_(pad), in_h_(in_h), in_w_(in_w) {
  if (c < 1 || kernel < 1 || stride < 1 || pad < 0 || pad >= kernel || in_h + 2 * pad < kernel ||
      in_w + 2 * pad < kernel)
    throw InputError("layer \"" + name() + "\": invalid " + (kind == PoolKind::max ? "max_pool" : "avg_pool") +
                     " attributes");
  out_h_ = (in_h + 2 * pad - kernel) / stride + 1;
  out_w_ = (in_w + 2 * pad - kernel) / stride + 1;
}

Pool::~Pool() = default;

Pool::Prims& Pool::prims(int64_t batch) {
  auto it = cache_.find(batch);
  if (it != cache_.end()) return *it->second;
  auto p = std::make_unique<Prims>();
  p->src = memory::desc({batch, c_, in_h_, in_w_}, dt::f32, tag::nchw);
  p->dst = memory::desc({batch, c_, out_h_, out_w_}, dt::f32, tag::nchw);
  const memory::dims strides{stride_, stride_}, kernel{k_, k_}, pads{pad_, pad_};
  const dnnl::algorithm alg = algorithm(kind_);
  auto& eng = cpu_engine();
  dnnl::pooling_forward::primitive_desc fpd(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, alg, p->src, p->dst, strides, kernel, pads, pads),
      eng);
  dnnl::pooling_backward::primitive_desc bpd(
      dnnl::pooling_backward::desc(alg, p->src, p->dst, strides, kernel, pads, pads), eng, fpd);
  if (kind_ == PoolKind::max) p->ws = fpd.workspace_desc();
  p->fwd = dnnl::pooling_forward(fpd);
  p->bwd = dnnl::pooling_backward(bpd);
  return *cache_.emplace(batch, std::move(p)).first->second;
}

Tensor Pool::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  Prims& p = prims(x.dim(0));
  Tensor y({x.dim(0), c_, out_h_, out_w_});
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, cpu_memory(p.src, x.data())},
                                       {DNNL_ARG_DST, cpu_memory(p.dst, y.data())}};
  if (kind_ == PoolKind::max) {
    const int64_t ws_floats = std::max<int64_t>(1, static_cast<int64_t>((p.ws.get_size() + 3) / 4));
    Tensor ws({ws_floats});
    args.emplace(DNNL_ARG_WORKSPACE, memory(p.ws, cpu_engine(), ws.data()));
    run_primitive(p.fwd, args);
    ctx.saved.push_back(std::move(ws));
  } else {
    run_primitive(p.fwd, args);
  }
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> Pool::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Prims& p = prims(x.dim(0));
  Tensor dx(x.shape());
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, cpu_memory(p.dst, grad_out.data())},
                                       {DNNL_ARG_DIFF_SRC, cpu_memory(p.src, dx.data())}};
  if (kind_ == PoolKind::max) args.emplace(DNNL_ARG_WORKSPACE, memory(p.ws, cpu_engine(), ctx.saved.at(0).data()));
  run_primitive(p.bwd, args);
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

}  // namespace pw::exec
