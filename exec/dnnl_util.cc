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
