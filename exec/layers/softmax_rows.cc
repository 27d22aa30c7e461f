#include "exec/layers/softmax_rows.h"
#include "exec/layers/vector_clones.h"

#include <bit>
#include <limits>

namespace pw::exec {

namespace {
constexpr int kSoftmaxLanes = 16;  // partial sums per row: one AVX-512 register

// Cephes-style expf: x = n*ln2 + r, |r| <= ln2/2, exp(r) by a degree-6 polynomial, 2^n by
// building the exponent bits. Branch-free so loops calling it vectorize.
inline float exp_poly(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const int32_t e = (static_cast<int32_t>(n) + 127) << 23;
  return y * std::bit_cast<float>(e);
}
}  // namespace

float fast_exp(float x) { return exp_poly(x); }

PW_VECTOR_CLONES
void softmax_row(float* row, int64_t n, float scale) {
  float mxv[kSoftmaxLanes];
  for (int k = 0; k < kSoftmaxLanes; ++k) mxv[k] = -std::numeric_limits<float>::infinity();
  int64_t j = 0;
  for (; j + kSoftmaxLanes <= n; j += kSoftmaxLanes)
    for (int k = 0; k < kSoftmaxLanes; ++k) mxv[k] = row[j + k] > mxv[k] ? row[j + k] : mxv[k];
  float mx = -std::numeric_limits<float>::infinity();
  for (int k = 0; k < kSoftmaxLanes; ++k) mx = mxv[k] > mx ? mxv[k] : mx;
  for (; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
  // softmax(row*scale) = exp(scale*(row - max)) / sum  (scale > 0)
  float sv[kSoftmaxLanes] = {};
  j = 0;
  for (; j + kSoftmaxLanes <= n; j += kSoftmaxLanes)
    for (int k = 0; k < kSoftmaxLanes; ++k) {
      const float e = exp_poly((row[j + k] - mx) * scale);
      row[j + k] = e;
      sv[k] += e;
    }
  float sum = 0.0f;
  for (; j < n; ++j) {
    row[j] = exp_poly((row[j] - mx) * scale);
    sum += row[j];
  }
  for (int k = 0; k < kSoftmaxLanes; ++k) sum += sv[k];
  const float inv = 1.0f / sum;
  for (j = 0; j < n; ++j) row[j] *= inv;
}

PW_VECTOR_CLONES
void softmax_backward_row(const float* p, float* d, int64_t n, float scale) {
  float dv[kSoftmaxLanes] = {};
  int64_t j = 0;
  for (; j + kSoftmaxLanes <= n; j += kSoftmaxLanes)
    for (int k = 0; k < kSoftmaxLanes; ++k) dv[k] += p[j + k] * d[j + k];
  float dot = 0.0f;
  for (; j < n; ++j) dot += p[j] * d[j];
  for (int k = 0; k < kSoftmaxLanes; ++k) dot += dv[k];
  for (j = 0; j < n; ++j) d[j] = p[j] * (d[j] - dot) * scale;
}

}  // namespace pw::exec
