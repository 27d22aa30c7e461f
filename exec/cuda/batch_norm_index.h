// Index math and per-element formulas of the CUDA batch_norm kernels (batch_norm_kernels.cu),
// shared with the host tests that run them in loops against the oneDNN layer. x is
// [batch, c, spatial]; statistics per group of `group` consecutive samples (the last group may
// be smaller; conv_plan.h: stat_groups), per channel; eps and momentum as
// exec/layers/batch_norm.h.
#pragma once

#include <math.h>

#include <cstdint>

#include "exec/cuda/cnn_index.h"

namespace pw::exec::cuda {

struct BatchNormShape {
  int64_t batch = 0, c = 0, spatial = 0, group = 0, groups = 0;  // group: samples per group
};

inline constexpr float kBatchNormEps = 1e-5f;

// Samples of group k.
PW_CNN_HD inline int64_t bn_group_samples(const BatchNormShape& s, int64_t k) {
  const int64_t rest = s.batch - k * s.group;
  return rest < s.group ? rest : s.group;
}

// Index in x of element j (j < samples * spatial) of group k, channel c.
PW_CNN_HD inline int64_t bn_element(const BatchNormShape& s, int64_t k, int64_t c, int64_t j) {
  const int64_t sample = k * s.group + j / s.spatial;
  return (sample * s.c + c) * s.spatial + j % s.spatial;
}

// The statistics slot [group, channel] of element i of x.
PW_CNN_HD inline int64_t bn_stat_slot(const BatchNormShape& s, int64_t i) {
  const int64_t c = (i / s.spatial) % s.c, k = i / (s.spatial * s.c) / s.group;
  return k * s.c + c;
}

// y of element i: gamma / sqrt(var + eps) * (x - mean) + beta.
PW_CNN_HD inline float bn_forward_element(const float* x, const float* gamma, const float* beta, const float* mean,
                                          const float* var, const BatchNormShape& s, int64_t i) {
  const int64_t st = bn_stat_slot(s, i), c = st % s.c;
  const float sm = gamma[c] / sqrtf(var[st] + kBatchNormEps);
  return sm * (x[i] - mean[st]) + beta[c];
}

// dx of element i from part [groups, 2, c] (the group's dgamma, dbeta):
// gamma * rstd * (dy - (dbeta + xhat * dgamma) / m), m = the group's elements per channel.
PW_CNN_HD inline float bn_input_grad_element(const float* x, const float* dy, const float* gamma, const float* mean,
                                             const float* var, const float* part, const BatchNormShape& s, int64_t i) {
  const int64_t st = bn_stat_slot(s, i), c = st % s.c, k = st / s.c;
  const float m = static_cast<float>(bn_group_samples(s, k) * s.spatial);
  const float rstd = 1.0f / sqrtf(var[st] + kBatchNormEps);
  const float xhat = (x[i] - mean[st]) * rstd;
  const float dg = part[(k * 2) * s.c + c], db = part[(k * 2 + 1) * s.c + c];
  return gamma[c] * rstd * (dy[i] - (db + xhat * dg) / m);
}

// Unbiasing factor m / (m - 1) of group k's variance (1 for a single element).
PW_CNN_HD inline float bn_unbias(const BatchNormShape& s, int64_t k) {
  const double m = static_cast<double>(bn_group_samples(s, k) * s.spatial);
  return m > 1 ? static_cast<float>(m / (m - 1)) : 1.0f;
}

}  // namespace pw::exec::cuda
