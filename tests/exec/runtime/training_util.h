// Helpers of the runtime training tests: tiny zoo models, deterministic data, a plain SGD,
// even stage splits, and comparisons of parameter sets.
#pragma once

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "exec/layers/network.h"
#include "exec/runtime/pipeline_runtime.h"
#include "exec/runtime/run_compute.h"
#include "models/zoo.h"

namespace pw::exec::testing {

inline models::Model tiny_model(const std::string& family, int64_t batch) {
  models::ZooOptions o;
  o.batch = batch;
  if (family == "gpt") {
    o.layers = 3;
    o.d_model = 16;
    o.heads = 2;
    o.ffn = 32;
    o.seq = 8;
    o.vocab = 32;
  } else {
    o.depth = 4;
    o.width = 16;
  }
  return models::build_zoo_model(family, o);
}

// Per-sample deterministic data, so a micro-batch slice equals the same rows of the batch.
inline DataFn tiny_data(const Network& net) {
  const bool tokens = net.model().layers().front().attrs.count("vocab") > 0;
  const int64_t vocab = tokens ? net.model().layers().front().attrs.at("vocab") : 0;
  return [tokens, vocab](int it, int64_t first, int64_t count, Tensor* data, Tensor* targets) {
    for (Tensor* t : {data, targets}) {
      if (!t) continue;
      const int64_t row = t->numel() / count;
      for (int64_t i = 0; i < count; ++i)
        for (int64_t k = 0; k < row; ++k) {
          const int64_t sample = first + i;
          float v;
          if (tokens) {
            const int64_t shift = t == targets ? 1 : 0;
            v = static_cast<float>((sample * 7 + (k + shift) * 3 + (k + shift) * (k + shift)) % vocab);
          } else {
            v = static_cast<float>(std::sin(0.37 * (sample + 1) * (k + 1) + (t == targets ? 0.5 : 0.0)));
          }
          t->data()[i * row + k] = v;
        }
    }
  };
}

class PlainSgd final : public StageOptimizer {
 public:
  PlainSgd(std::vector<Tensor*> p, std::vector<Tensor*> g, float lr, float momentum)
      : p_(std::move(p)), g_(std::move(g)), lr_(lr), momentum_(momentum) {
    for (Tensor* t : p_) v_.push_back(Tensor::zeros(t->shape()));
  }
  void step() override {
    for (size_t i = 0; i < p_.size(); ++i) {
      float* w = p_[i]->data();
      const float* g = g_[i]->data();
      float* v = v_[i].data();
      for (int64_t k = 0; k < p_[i]->numel(); ++k) {
        v[k] = momentum_ * v[k] + g[k];
        w[k] -= lr_ * v[k];
      }
    }
  }
  int64_t state_bytes() const override {
    int64_t b = 0;
    for (const Tensor& t : v_) b += t.bytes();
    return b;
  }
  // The momentum buffer of `param` (the update is -lr times it), null if param is not one of
  // this optimizer's parameters.
  Tensor* velocity(const Tensor* param) {
    for (size_t i = 0; i < p_.size(); ++i)
      if (p_[i] == param) return &v_[i];
    return nullptr;
  }

 private:
  std::vector<Tensor*> p_, g_;
  std::vector<Tensor> v_;
  float lr_, momentum_;
};

inline OptimizerFactory plain_sgd(float lr = 0.1f, float momentum = 0.9f) {
  return [=](std::vector<Tensor*> p, std::vector<Tensor*> g) {
    return std::make_unique<PlainSgd>(std::move(p), std::move(g), lr, momentum);
  };
}

// The optimizers a plain_sgd factory made (owned by the compute that asked for them), so a test
// can read and set their momentum buffers. Not thread-safe: computes create their optimizers in
// their constructor, on the caller's thread.
struct SgdRegistry {
  std::vector<PlainSgd*> made;
  Tensor* velocity(const Tensor* param) {
    for (PlainSgd* o : made)
      if (Tensor* v = o->velocity(param)) return v;
    return nullptr;
  }
};

inline OptimizerFactory plain_sgd(float lr, float momentum, SgdRegistry* registry) {
  return [=](std::vector<Tensor*> p, std::vector<Tensor*> g) {
    auto o = std::make_unique<PlainSgd>(std::move(p), std::move(g), lr, momentum);
    registry->made.push_back(o.get());
    return o;
  };
}

inline std::vector<StageRange> even_ranges(int layers, int stages, bool recompute) {
  std::vector<StageRange> r;
  for (int s = 0; s < stages; ++s) r.push_back({s * layers / stages, (s + 1) * layers / stages, recompute});
  return r;
}

// Largest |a - b| / max|b| over the tensors of two parameter lists (0 when equal).
inline double max_relative_difference(const std::vector<Tensor*>& a, const std::vector<Tensor*>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = 0, scale = 1e-30;
    for (int64_t k = 0; k < a[i]->numel(); ++k) {
      diff = std::max(diff, static_cast<double>(std::fabs(a[i]->data()[k] - b[i]->data()[k])));
      scale = std::max(scale, static_cast<double>(std::fabs(b[i]->data()[k])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// Largest |a - b| / (max|b_t| + max|b|) over the tensors b_t of a parameter list: per tensor,
// relative to that tensor's largest reference value plus the list's largest one (the mixed
// absolute + relative tolerance of numpy's allclose, the absolute part at the list's scale).
// For comparing sums taken in another order: their rounding error scales with the sum of the
// terms' magnitudes, not with the result, so a gradient that nearly cancels (batch norm's scale
// right after the stem, 8.7e-5 where its neighbours are 0.3 to 1.7) differs by 1.5e-2 of itself
// and still by only 1e-6 of the model's gradients.
inline double max_mixed_difference(const std::vector<Tensor*>& a, const std::vector<Tensor*>& b) {
  double overall = 0;
  for (const Tensor* t : b)
    for (int64_t k = 0; k < t->numel(); ++k) overall = std::max(overall, static_cast<double>(std::fabs(t->data()[k])));
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = 0, scale = 1e-30 + overall;
    double largest = 0;
    for (int64_t k = 0; k < a[i]->numel(); ++k) {
      diff = std::max(diff, static_cast<double>(std::fabs(a[i]->data()[k] - b[i]->data()[k])));
      largest = std::max(largest, static_cast<double>(std::fabs(b[i]->data()[k])));
    }
    worst = std::max(worst, diff / (scale + largest));
  }
  return worst;
}

// Runtime options of the training tests: one OpenMP thread per worker (the layers are tiny;
// OpenMP teams would only spin) and a step deadline of `timeout_ms`.
inline RuntimeOptions one_thread_options(int timeout_ms = 60000) {
  RuntimeOptions o;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  o.threads_per_worker = 1;
  return o;
}

// Pointers to each tensor of `ts`, in order (what the comparisons and the all-reduce take).
inline std::vector<Tensor*> pointers_of(std::vector<Tensor>& ts) {
  std::vector<Tensor*> r;
  for (Tensor& t : ts) r.push_back(&t);
  return r;
}

}  // namespace pw::exec::testing
