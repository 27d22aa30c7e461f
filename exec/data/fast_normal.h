// Cheap approximately normal noise for the synthetic data sources (exec/data/data.h).
//
// One splitmix64 draw (exec/layers/common.h's Rng) per value: its four 16-bit quarters are four
// uniforms on (0, 1) (the midpoints (h + 0.5) / 65536), and their sum, centred and scaled by
// sqrt(3), has mean 0 and variance 1 - 2^-32 (Irwin-Hall of order 4: support +-3.46, excess
// kurtosis -0.3). This replaced Box-Muller (log, sqrt and cos per value), which cost ~30 ns a
// value; the data's role (zero-mean, unit-variance inputs) is unchanged. Deterministic: value i
// of a fill depends only on the Rng state and i, and the Rng advances by exactly one draw per
// value, so filling n values and then m equals filling n + m.
#pragma once

#include <cstdint>

#include "exec/layers/common.h"

namespace pw::exec {

inline float approx_normal(Rng& rng) {
  const uint64_t v = rng.next();
  const uint64_t s = (v & 0xFFFF) + ((v >> 16) & 0xFFFF) + ((v >> 32) & 0xFFFF) + (v >> 48);
  // sum of (h + 0.5) / 65536 over the quarters, minus its mean 2, times sqrt(3)
  constexpr double kScale = 1.7320508075688772 / 65536.0;
  return static_cast<float>((static_cast<double>(s) + 2.0 - 131072.0) * kScale);
}

// x[i] = approx_normal(rng) * stddev for i in [0, n).
inline void fill_approx_normal(float* x, int64_t n, Rng& rng, float stddev = 1.0f) {
  for (int64_t i = 0; i < n; ++i) x[i] = approx_normal(rng) * stddev;
}

}  // namespace pw::exec
