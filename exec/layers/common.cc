#include "exec/layers/common.h"

#include "exec/parallel.h"

namespace pw::exec {

void add_column_sums(const float* x, int64_t rows, int64_t cols, float* out) {
  parallel_for(cols, [&](int64_t c0, int64_t c1) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * cols;
      for (int64_t c = c0; c < c1; ++c) out[c] += row[c];
    }
  }, 16);
}

void add_into(float* y, const float* x, int64_t n) {
  parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] += x[i];
  }, 4096);
}

}  // namespace pw::exec
