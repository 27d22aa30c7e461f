// Finite-difference gradient checks for exec layers (test helper).
//
// Objective L = sum(forward(inputs) * R) for a fixed random R, evaluated with a double-precision
// accumulation; its central difference (step eps) is the reference for the analytic B (input
// gradients) and W (parameter gradients). Compared as a norm-wise relative error over a sample
// of elements of every differentiable tensor.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "exec/layer.h"
#include "exec/layers/common.h"

namespace pw::exec::testing {

inline Tensor random_tensor(std::vector<int64_t> shape, uint64_t seed, double lo = -1, double hi = 1) {
  Tensor t(std::move(shape));
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(lo + (hi - lo) * rng.uniform());
  return t;
}

struct GradCheckResult {
  std::vector<double> input_errors;  // per differentiable input
  std::vector<double> param_errors;  // per parameter tensor
  double worst() const {
    double w = 0;
    for (double e : input_errors) w = std::max(w, e);
    for (double e : param_errors) w = std::max(w, e);
    return w;
  }
};

inline double objective(Layer& layer, const std::vector<const Tensor*>& in, const Tensor& r) {
  Context ctx;
  Tensor y = layer.forward(in, ctx);
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += static_cast<double>(y.data()[i]) * r.data()[i];
  return s;
}

inline double rel_error(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

// `differentiable[k]`: whether input k gets a gradient. `w_first`: run W before B.
inline GradCheckResult grad_check(Layer& layer, std::vector<Tensor>& inputs, const std::vector<bool>& differentiable,
                                  double eps = 1e-2, int max_samples = 48, bool w_first = false) {
  std::vector<const Tensor*> in;
  for (Tensor& t : inputs) in.push_back(&t);
  Context ctx;
  Tensor y = layer.forward(in, ctx);
  Tensor r = random_tensor(y.shape(), 99, -1, 1);
  layer.zero_grad();
  std::vector<Tensor> din;
  if (w_first) {
    layer.backward_weight(in, ctx, r);
    din = layer.backward_input(in, ctx, r);
  } else {
    din = layer.backward_input(in, ctx, r);
    layer.backward_weight(in, ctx, r);
  }
  GradCheckResult res;
  auto check = [&](Tensor& x, const Tensor& analytic) {
    std::vector<double> a, fd;
    const int64_t n = x.numel();
    const int64_t step = std::max<int64_t>(1, n / max_samples);
    for (int64_t i = 0; i < n; i += step) {
      const float orig = x.data()[i];
      x.data()[i] = orig + static_cast<float>(eps);
      const double lp = objective(layer, in, r);
      x.data()[i] = orig - static_cast<float>(eps);
      const double lm = objective(layer, in, r);
      x.data()[i] = orig;
      fd.push_back((lp - lm) / (2 * eps));
      a.push_back(analytic.data()[i]);
    }
    return rel_error(a, fd);
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!differentiable[k]) continue;
    if (din.at(k).empty() || din[k].shape() != inputs[k].shape()) {
      res.input_errors.push_back(1e9);
      continue;
    }
    res.input_errors.push_back(check(inputs[k], din[k]));
  }
  auto params = layer.parameters();
  auto grads = layer.gradients();
  std::vector<Tensor> gcopy;
  for (Tensor* g : grads) gcopy.push_back(g->clone());
  for (size_t p = 0; p < params.size(); ++p) res.param_errors.push_back(check(*params[p], gcopy[p]));
  return res;
}

// A vector holding `t` alone (the layers take lists of inputs).
inline std::vector<Tensor> one_tensor(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

// A layer spec for the checks (name, kind, input names, output shape, attributes).
inline models::LayerSpec spec(const std::string& name, models::LayerKind kind, std::vector<std::string> inputs,
                              std::vector<int64_t> out, std::map<std::string, int64_t> attrs = {}) {
  models::LayerSpec s;
  s.name = name;
  s.kind = kind;
  s.inputs = std::move(inputs);
  s.output_shape = std::move(out);
  s.attrs = std::move(attrs);
  return s;
}

inline constexpr double kTol = 1e-3;

// Every input and parameter was checked, each within kTol relative error.
inline void expect_ok(const GradCheckResult& r, size_t inputs, size_t params) {
  CHECK(r.input_errors.size() == inputs);
  CHECK(r.param_errors.size() == params);
  for (double e : r.input_errors) CHECK(e < kTol);
  for (double e : r.param_errors) CHECK(e < kTol);
}

}  // namespace pw::exec::testing
