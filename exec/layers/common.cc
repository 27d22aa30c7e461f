#include "exec/layers/common.h"

#include <vector>

#include "exec/parallel.h"

namespace pw::exec {

void fill_normal(Tensor& t, Rng& rng, double stddev) {
  const uint64_t start = rng.state();
  const int64_t n = t.numel();
  float* p = t.data();
  parallel_for(
      n,
      [&](int64_t b, int64_t e) {
        Rng r(0);
        r.set_state(start + 2 * static_cast<uint64_t>(b) * Rng::kIncrement);
        for (int64_t i = b; i < e; ++i) p[i] = static_cast<float>(r.normal() * stddev);
      },
      1 << 14);
  rng.set_state(start + 2 * static_cast<uint64_t>(n) * Rng::kIncrement);
}

void add_column_sums(const float* x, int64_t rows, int64_t cols, float* out) {
  parallel_for(
      cols,
      [&](int64_t c0, int64_t c1) {
        std::vector<float> sum(static_cast<size_t>(c1 - c0), 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
          const float* row = x + r * cols + c0;
          for (int64_t c = 0; c < c1 - c0; ++c) sum[c] += row[c];
        }
        for (int64_t c = c0; c < c1; ++c) out[c] += sum[c - c0];
      },
      16);
}

void add_into(float* y, const float* x, int64_t n) {
  parallel_for(
      n,
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] += x[i];
      },
      4096);
}

}  // namespace pw::exec
