// A tanh for the synthetic regression targets (exec/data/data.cc) that the compiler vectorizes.
//
// std::tanh is a scalar libm call (~20 ns a value; 64% of the CPU time of drawing an mlp 8x1024
// mini-batch of 256 samples, perf: the background loader's work competes with the
// pipeline's workers on a 2-core machine). Here: tanh |x| = m / (m + 2) with m = exp(2|x|) - 1,
// |x| clamped to 9 (tanh(9) rounds to 1 in float), the sign put back at the end (so it is exactly
// odd); m by Cody-Waite reduction to r in [-ln2/2, ln2/2], a degree-7 Taylor polynomial of
// e^r - 1 and the exponent set through the float's bits. No branch and no float comparison,
// so a loop over an array vectorizes (SSE2 and up). Absolute error below 3e-7 over the whole
// line (tests/exec/data/data_test.cc checks it against std::tanh); not bit-identical to libm,
// which the data do not need. A NaN comes out as +-1.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace pw::exec {

inline float fast_tanh(float x) {
  // |x| clamped to 9 through its bits (non-negative floats order as their bits): an integer
  // minimum, because a float comparison may trap and GCC then keeps it as a branch.
  int32_t abits;
  const float ax0 = std::fabs(x);
  std::memcpy(&abits, &ax0, sizeof abits);
  constexpr int32_t kNineBits = 0x41100000;  // 9.0f
  abits = abits < kNineBits ? abits : kNineBits;
  float ax;
  std::memcpy(&ax, &abits, sizeof ax);
  const float y = 2.0f * ax;  // in [0, 18]
  // exp(y) - 1 = 2^n (1 + q) - 1 = 2^n q + (2^n - 1), n = round(y / ln 2), q = e^r - 1 with
  // r = y - n ln 2 (ln 2 split in two for exactness): for small y, n = 0 and the result is q,
  // as accurate relative to y as the polynomial, with no cancellation.
  const float nf = static_cast<float>(static_cast<int32_t>(y * 1.44269504f + 0.5f));
  const float r = (y - nf * 0.693145752f) - nf * 1.42860677e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  const float q = p * r;
  const int32_t bits = (static_cast<int32_t>(nf) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  const float em1 = two_n * q + (two_n - 1.0f);
  return std::copysign(em1 / (em1 + 2.0f), x);
}

}  // namespace pw::exec
