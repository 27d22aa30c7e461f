// Helpers shared by the layer implementations (private to exec/).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/layer.h"

namespace pw::exec {

inline std::vector<int64_t> with_batch(int64_t batch, const std::vector<int64_t>& sample) {
  std::vector<int64_t> s{batch};
  s.insert(s.end(), sample.begin(), sample.end());
  return s;
}

// Deterministic seeded generator (splitmix64) for parameter initialization and data.
class Rng {
 public:
  static constexpr uint64_t kIncrement = 0x9E3779B97F4A7C15ull;  // the state's step per draw
  explicit Rng(uint64_t seed) : s_(seed * kIncrement + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {
    uint64_t z = (s_ += kIncrement);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {
    const double u1 = uniform() + 1e-300, u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  // The whole generator state (checkpoints save and restore it).
  uint64_t state() const { return s_; }
  void set_state(uint64_t s) { s_ = s; }

 private:
  uint64_t s_;
};

// t[i] = rng.normal() * stddev for i in order, leaving rng after the last draw. Parallel with the
// sequential loop's bits: the state advances by kIncrement per draw (two per normal), so element
// i's draws start from the state 2i draws on (exec/layers/common.cc).
void fill_normal(Tensor& t, Rng& rng, double stddev);

inline uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  Rng r(seed ^ (salt * 0xD1B54A32D192ED03ull));
  return r.next();
}

// Column sums of a [rows, cols] matrix accumulated into out[cols] (parallel over columns).
// Each column's sum is formed on its own (rows in order from 0) and then added to out once, as
// the GEMMs add a whole weight gradient: accumulating two micro-batches' sums gives the same
// bits in either order (a + b == b + a), so gpipe's reversed backward order and 1f1b's agree.
void add_column_sums(const float* x, int64_t rows, int64_t cols, float* out);
// y[i] += x[i] (parallel).
void add_into(float* y, const float* x, int64_t n);

}  // namespace pw::exec
