#include "exec/layers/concat.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "exec/dnnl_util.h"
#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

using dnnl::memory;
using dt = dnnl::memory::data_type;

struct Concat::Prims {
  std::vector<memory::desc> src;
  memory::desc dst;
  dnnl::concat fwd;
};

namespace {
// [batch, d0, rest] with rest the product of the remaining per-sample dims (plain layout).
memory::desc desc3(int64_t batch, int64_t d0, int64_t rest) {
  return memory::desc({batch, d0, rest}, dt::f32, memory::format_tag::abc);
}
}  // namespace

Concat::Concat(models::LayerSpec spec, std::vector<std::vector<int64_t>> in_shapes)
    : Layer(std::move(spec)), in_shapes_(std::move(in_shapes)) {
  if (in_shapes_.empty()) throw InputError("layer \"" + name() + "\": concat needs at least one input");
  out_shape_ = in_shapes_[0];
  if (out_shape_.empty()) throw InputError("layer \"" + name() + "\": concat of scalars");
  out_shape_[0] = 0;
  for (const auto& s : in_shapes_) {
    if (s.size() != out_shape_.size() || !std::equal(s.begin() + 1, s.end(), out_shape_.begin() + 1))
      throw InputError("layer \"" + name() + "\": concat inputs differ beyond their first dimension");
    out_shape_[0] += s[0];
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    in_elems_.push_back(n);
    out_elems_ += n;
  }
}

Concat::~Concat() = default;

Concat::Prims& Concat::prims(int64_t batch) {
  auto it = cache_.find(batch);
  if (it != cache_.end()) return *it->second;
  auto p = std::make_unique<Prims>();
  const int64_t rest = out_elems_ / out_shape_[0];
  for (const auto& s : in_shapes_) p->src.push_back(desc3(batch, s[0], rest));
  p->dst = desc3(batch, out_shape_[0], rest);
  dnnl::concat::primitive_desc pd(p->dst, 1, p->src, cpu_engine());
  p->fwd = dnnl::concat(pd);
  return *cache_.emplace(batch, std::move(p)).first->second;
}

Tensor Concat::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const int64_t batch = in[0]->dim(0);
  for (size_t k = 0; k < in_shapes_.size(); ++k) {
    check_input(*in[k], k);
    if (in[k]->dim(0) != batch) throw InputError("layer \"" + name() + "\": inputs have different batch sizes");
  }
  Prims& p = prims(batch);
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), out_shape_.begin(), out_shape_.end());
  Tensor y(shape);
  std::unordered_map<int, memory> args;
  for (size_t k = 0; k < in_shapes_.size(); ++k)
    args.emplace(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k),
                 memory(p.src[k], cpu_engine(), const_cast<float*>(in[k]->data())));
  args.emplace(DNNL_ARG_DST, memory(p.dst, cpu_engine(), y.data()));
  p.fwd.execute(cpu_stream(), args);
  cpu_stream().wait();
  ctx.batch = batch;
  return y;
}

std::vector<Tensor> Concat::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  const int64_t batch = grad_out.dim(0);
  std::vector<Tensor> r;
  int64_t offset = 0;
  for (size_t k = 0; k < in_shapes_.size(); ++k) {
    Tensor dx(in[k]->shape());
    const int64_t n = in_elems_[k];
    const float* g = grad_out.data() + offset;
    float* d = dx.data();
    parallel_for(
        batch,
        [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b)
            std::memcpy(d + b * n, g + b * out_elems_, static_cast<size_t>(n) * sizeof(float));
        },
        1);
    offset += n;
    r.push_back(std::move(dx));
  }
  return r;
}

}  // namespace pw::exec
