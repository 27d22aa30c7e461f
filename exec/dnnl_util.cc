#include "exec/dnnl_util.h"

#include <algorithm>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "exec/backend_errors.h"
#include "models/error.h"

namespace pw::exec {

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

dnnl::memory cpu_memory(const dnnl::memory::desc& d, const float* p) {
  return dnnl::memory(d, cpu_engine(), const_cast<float*>(p));
}

void run_primitive(dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
  p.execute(cpu_stream(), args);
  cpu_stream().wait();
}

MatView::MatView(std::initializer_list<int64_t> d, std::initializer_list<int64_t> s) {
  if (d.size() != s.size() || d.size() < 1 || d.size() > static_cast<size_t>(kMaxRank))
    throw std::invalid_argument("MatView: dims and strides must have the same rank, 1.." + std::to_string(kMaxRank));
  rank = static_cast<int>(d.size());
  std::copy(d.begin(), d.end(), dims.begin());
  std::copy(s.begin(), s.end(), strides.begin());
}

dnnl::memory::desc make_desc(const MatView& v) {
  return dnnl::memory::desc(dnnl::memory::dims(v.dims.begin(), v.dims.begin() + v.rank), dnnl::memory::data_type::f32,
                            dnnl::memory::dims(v.strides.begin(), v.strides.begin() + v.rank));
}

namespace {
// Memory objects are made once and re-pointed per call (set_data_handle), so a call allocates
// nothing of its own (see MatmulCache).
struct GeluPrims {
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
  dnnl::memory x, y, dy, dx;
  std::unordered_map<int, dnnl::memory> fwd_args, bwd_args;
};

GeluPrims& gelu_prims(int64_t n) {
  thread_local std::unordered_map<int64_t, GeluPrims> cache;
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  using dnnl::algorithm;
  dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, algorithm::eltwise_gelu_tanh, md, 0.0f, 0.0f);
  dnnl::eltwise_forward::primitive_desc fpd(fd, cpu_engine());
  dnnl::eltwise_backward::desc bd(algorithm::eltwise_gelu_tanh, md, md, 0.0f, 0.0f);
  dnnl::eltwise_backward::primitive_desc bpd(bd, cpu_engine(), fpd);
  auto& eng = cpu_engine();
  GeluPrims p{dnnl::eltwise_forward(fpd),
              dnnl::eltwise_backward(bpd),
              dnnl::memory(md, eng, DNNL_MEMORY_NONE),
              dnnl::memory(md, eng, DNNL_MEMORY_NONE),
              dnnl::memory(md, eng, DNNL_MEMORY_NONE),
              dnnl::memory(md, eng, DNNL_MEMORY_NONE),
              {},
              {}};
  p.fwd_args = {{DNNL_ARG_SRC, p.x}, {DNNL_ARG_DST, p.y}};
  p.bwd_args = {{DNNL_ARG_SRC, p.x}, {DNNL_ARG_DIFF_DST, p.dy}, {DNNL_ARG_DIFF_SRC, p.dx}};
  return cache.emplace(n, std::move(p)).first->second;
}
}  // namespace

void gelu_tanh_forward(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  GeluPrims& p = gelu_prims(n);
  p.x.set_data_handle(const_cast<float*>(x));
  p.y.set_data_handle(y);
  p.fwd.execute(cpu_stream(), p.fwd_args);
  cpu_stream().wait();
}

void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t n) {
  if (n <= 0) return;
  GeluPrims& p = gelu_prims(n);
  p.x.set_data_handle(const_cast<float*>(x));
  p.dy.set_data_handle(const_cast<float*>(dy));
  p.dx.set_data_handle(dx);
  p.bwd.execute(cpu_stream(), p.bwd_args);
  cpu_stream().wait();
}

namespace {
// The bias as a [1, .., 1, N] view broadcast over C's leading dims.
MatView bias_view_of(const MatView& c) {
  MatView v;
  v.rank = c.rank;
  for (int d = 0; d < c.rank; ++d) {
    v.dims[d] = 1;
    v.strides[d] = c.dims[c.rank - 1];
  }
  v.dims[c.rank - 1] = c.dims[c.rank - 1];
  v.strides[c.rank - 1] = 1;
  return v;
}
}  // namespace

struct MatmulCache::Entry {
  // Everything that tells two matmul descriptions apart, in fixed storage.
  struct Key {
    static constexpr int kLen = 3 * (1 + 2 * MatView::kMaxRank) + 2;
    std::array<int64_t, kLen> v{};

    Key(const MatView& a, const MatView& b, const MatView& c, bool bias, bool accumulate) {
      int i = 0;
      for (const MatView* m : {&a, &b, &c}) {
        v[i++] = m->rank;
        for (int d = 0; d < m->rank; ++d) v[i++] = m->dims[d];
        for (int d = 0; d < m->rank; ++d) v[i++] = m->strides[d];
      }
      v[i++] = bias;
      v[i++] = accumulate;
    }
    bool operator==(const Key& o) const { return v == o.v; }
  };
  Key key;
  dnnl::matmul prim;
  dnnl::memory src, weights, dst, bias;  // bias: empty without a bias
  std::unordered_map<int, dnnl::memory> args;
};

MatmulCache::MatmulCache() = default;
MatmulCache::~MatmulCache() = default;
MatmulCache::MatmulCache(const MatmulCache&) {}
MatmulCache& MatmulCache::operator=(const MatmulCache& o) {
  if (this != &o) {
    entries_.clear();
    last_ = 0;
  }
  return *this;
}
MatmulCache::MatmulCache(MatmulCache&&) noexcept = default;
MatmulCache& MatmulCache::operator=(MatmulCache&&) noexcept = default;

void MatmulCache::run(const MatView& a, const float* A, const MatView& b, const float* B, const MatView& c, float* C,
                      const float* bias, bool accumulate) {
  const Entry::Key key(a, b, c, bias != nullptr, accumulate);
  Entry* e = nullptr;
  if (last_ < entries_.size() && entries_[last_]->key == key) {
    e = entries_[last_].get();
  } else {
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i]->key == key) {
        e = entries_[i].get();
        last_ = i;
        break;
      }
  }
  if (!e) {
    auto ad = make_desc(a), bd = make_desc(b), cd = make_desc(c);
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    std::unique_ptr<dnnl::matmul::desc> d;
    dnnl::memory::desc biasd;
    if (bias) {
      biasd = make_desc(bias_view_of(c));
      d = std::make_unique<dnnl::matmul::desc>(ad, bd, biasd, cd);
    } else {
      d = std::make_unique<dnnl::matmul::desc>(ad, bd, cd);
    }
    dnnl::matmul::primitive_desc pd(*d, attr, cpu_engine());
    auto& eng = cpu_engine();
    auto made = std::make_unique<Entry>(Entry{key,
                                              dnnl::matmul(pd),
                                              dnnl::memory(ad, eng, DNNL_MEMORY_NONE),
                                              dnnl::memory(bd, eng, DNNL_MEMORY_NONE),
                                              dnnl::memory(cd, eng, DNNL_MEMORY_NONE),
                                              {},
                                              {}});
    made->args = {{DNNL_ARG_SRC, made->src}, {DNNL_ARG_WEIGHTS, made->weights}, {DNNL_ARG_DST, made->dst}};
    if (bias) {
      made->bias = dnnl::memory(biasd, eng, DNNL_MEMORY_NONE);
      made->args.emplace(DNNL_ARG_BIAS, made->bias);
    }
    entries_.push_back(std::move(made));
    last_ = entries_.size() - 1;
    e = entries_.back().get();
  }
  e->src.set_data_handle(const_cast<float*>(A));
  e->weights.set_data_handle(const_cast<float*>(B));
  e->dst.set_data_handle(C);
  if (bias) e->bias.set_data_handle(const_cast<float*>(bias));
  e->prim.execute(cpu_stream(), e->args);
  cpu_stream().wait();
}

std::string backend_out_of_memory(const std::exception& e) {
  const auto* d = dynamic_cast<const dnnl::error*>(&e);
  return d != nullptr && d->status == dnnl_out_of_memory ? std::string("oneDNN: ") + d->what() : std::string();
}

std::string out_of_memory_text(const std::exception& e) {
  if (dynamic_cast<const OutOfMemory*>(&e)) return e.what();
  if (dynamic_cast<const std::bad_alloc*>(&e)) return std::string("out of memory (") + e.what() + ")";
  const std::string backend = backend_out_of_memory(e);
  return backend.empty() ? backend : "out of memory (" + backend + ")";
}

}  // namespace pw::exec
