#include "exec/dnnl_util.h"

#include <memory>
#include <unordered_map>

namespace pw::exec {

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

dnnl::memory::desc make_desc(const MatView& v) {
  return dnnl::memory::desc(dnnl::memory::dims(v.dims.begin(), v.dims.end()),
                            dnnl::memory::data_type::f32,
                            dnnl::memory::dims(v.strides.begin(), v.strides.end()));
}

namespace {
struct GeluPrims {
  dnnl::memory::desc md;
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
};

GeluPrims& gelu_prims(int64_t n) {
  thread_local std::unordered_map<int64_t, GeluPrims> cache;
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  using dnnl::algorithm;
  dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, algorithm::eltwise_gelu_tanh,
                                 md, 0.0f, 0.0f);
  dnnl::eltwise_forward::primitive_desc fpd(fd, cpu_engine());
  dnnl::eltwise_backward::desc bd(algorithm::eltwise_gelu_tanh, md, md, 0.0f, 0.0f);
  dnnl::eltwise_backward::primitive_desc bpd(bd, cpu_engine(), fpd);
  return cache.emplace(n, GeluPrims{md, dnnl::eltwise_forward(fpd), dnnl::eltwise_backward(bpd)})
      .first->second;
}
}  // namespace

void gelu_tanh_forward(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  GeluPrims& p = gelu_prims(n);
  auto& eng = cpu_engine();
  p.fwd.execute(cpu_stream(), {{DNNL_ARG_SRC, dnnl::memory(p.md, eng, const_cast<float*>(x))},
                               {DNNL_ARG_DST, dnnl::memory(p.md, eng, y)}});
  cpu_stream().wait();
}

void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t n) {
  if (n <= 0) return;
  GeluPrims& p = gelu_prims(n);
  auto& eng = cpu_engine();
  p.bwd.execute(cpu_stream(), {{DNNL_ARG_SRC, dnnl::memory(p.md, eng, const_cast<float*>(x))},
                               {DNNL_ARG_DIFF_DST, dnnl::memory(p.md, eng, const_cast<float*>(dy))},
                               {DNNL_ARG_DIFF_SRC, dnnl::memory(p.md, eng, dx)}});
  cpu_stream().wait();
}

void MatmulCache::run(const MatView& a, const float* A, const MatView& b, const float* B,
                      const MatView& c, float* C, const float* bias, bool accumulate) {
  std::vector<int64_t> key;
  for (const MatView* v : {&a, &b, &c}) {
    key.push_back(static_cast<int64_t>(v->dims.size()));
    key.insert(key.end(), v->dims.begin(), v->dims.end());
    key.insert(key.end(), v->strides.begin(), v->strides.end());
  }
  key.push_back(bias != nullptr);
  key.push_back(accumulate);
  const size_t rank = c.dims.size();
  MatView bias_view;
  if (bias) {
    bias_view.dims.assign(rank, 1);
    bias_view.dims.back() = c.dims.back();
    bias_view.strides.assign(rank, c.dims.back());
    bias_view.strides.back() = 1;
  }
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    auto ad = make_desc(a), bd = make_desc(b), cd = make_desc(c);
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    std::unique_ptr<dnnl::matmul::desc> d;
    if (bias)
      d = std::make_unique<dnnl::matmul::desc>(ad, bd, make_desc(bias_view), cd);
    else
      d = std::make_unique<dnnl::matmul::desc>(ad, bd, cd);
    dnnl::matmul::primitive_desc pd(*d, attr, cpu_engine());
    it = cache_.emplace(std::move(key), dnnl::matmul(pd)).first;
  }
  auto& eng = cpu_engine();
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(make_desc(a), eng, const_cast<float*>(A))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(make_desc(b), eng, const_cast<float*>(B))},
      {DNNL_ARG_DST, dnnl::memory(make_desc(c), eng, C)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(make_desc(bias_view), eng, const_cast<float*>(bias)));
  it->second.execute(cpu_stream(), args);
  cpu_stream().wait();
}

}  // namespace pw::exec
