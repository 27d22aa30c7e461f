#include "exec/layers/embedding.h"

#include "exec/layers/common.h"
#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

Embedding::Embedding(models::LayerSpec spec, int64_t vocab, int64_t seq, int64_t d_model)
    : Layer(std::move(spec)), vocab_(vocab), seq_(seq), d_(d_model) {
  if (vocab < 1 || seq < 1 || d_model < 1)
    throw InputError("layer \"" + name() + "\": embedding vocab, seq and d_model must be >= 1");
  tokens_ = Tensor::zeros({vocab_, d_});
  positions_ = Tensor::zeros({seq_, d_});
  grad_tokens_ = Tensor::zeros({vocab_, d_});
  grad_positions_ = Tensor::zeros({seq_, d_});
  register_parameter(&tokens_, &grad_tokens_);
  register_parameter(&positions_, &grad_positions_);
}

void Embedding::init_parameters(uint64_t seed) {
  Rng rng(seed);
  fill_normal(tokens_, rng, 0.02);
  fill_normal(positions_, rng, 0.01);
}

Tensor Embedding::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& ids = *in[0];
  check_input(ids, 0);
  const int64_t rows = ids.numel(), d = d_;
  Tensor y({ids.dim(0), seq_, d_});
  const float* ip = ids.data();
  const float* tp = tokens_.data();
  const float* pp = positions_.data();
  float* yp = y.data();
  parallel_for(
      rows,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const float v = ip[r];
          const int64_t id = static_cast<int64_t>(v);
          if (!(v >= 0.0f) || static_cast<float>(id) != v || id >= vocab_)
            throw InputError("layer \"" + name() + "\": token id " + std::to_string(v) + " is not in [0, " +
                             std::to_string(vocab_) + ")");
          const float* t = tp + id * d;
          const float* p = pp + (r % seq_) * d;
          float* o = yp + r * d;
          for (int64_t i = 0; i < d; ++i) o[i] = t[i] + p[i];
        }
      },
      4);
  ctx.batch = ids.dim(0);
  return y;
}

std::vector<Tensor> Embedding::backward_input(Inputs, Context&, const Tensor&) { return std::vector<Tensor>(1); }

void Embedding::backward_weight(Inputs in, Context&, const Tensor& grad_out) {
  const Tensor& ids = *in[0];
  const int64_t rows = ids.numel(), d = d_;
  const float* ip = ids.data();
  const float* g = grad_out.data();
  float* gt = grad_tokens_.data();
  float* gp = grad_positions_.data();
  parallel_for(
      d,
      [&](int64_t c0, int64_t c1) {
        for (int64_t r = 0; r < rows; ++r) {
          const float* gr = g + r * d;
          float* t = gt + static_cast<int64_t>(ip[r]) * d;
          float* p = gp + (r % seq_) * d;
          for (int64_t i = c0; i < c1; ++i) {
            t[i] += gr[i];
            p[i] += gr[i];
          }
        }
      },
      16);
}

}  // namespace pw::exec
