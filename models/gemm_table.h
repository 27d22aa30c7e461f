// Measured matrix-product times of one device at one precision, and the time of any product
// interpolated from them (the measured counterpart of models/gemm_efficiency.h's curve).
//
// A table holds the seconds of one product C[m x n] = A[m x k] B[k x n] for every (m, n, k) in
// sizes x sizes x sizes (sizes ascending, each >= 1), as `pipewright calibrate` measured them.
// The time of a product (m, n, k) with `count` independent members is priced at the rate
// (FLOP/s) the table gives for its shape, interpolated linearly in (log2 m, log2 n, log2 k)
// on log rate; outside the grid the nearest edge's rate holds. Two rules make the table
// answer shapes it was not measured at:
// - A batched product fills the machine like one product of count x m rows (the same tiles;
//   NVIDIA's "Matrix Multiplication Background User's Guide", section 3): its rate is looked
//   up at rows count x m.
// - A dimension below the smallest size costs what the smallest size costs (below it a product
//   is bound by latency, not work): seconds = 2 max(M, s0) max(n, s0) max(k, s0) / rate,
//   with M = count x m and s0 = sizes.front().
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pw::models {

// The arithmetic of a product: fp32, fp32 inputs on TF32 tensor cores, or bf16 inputs with
// fp32 accumulation.
enum class Precision { fp32, tf32, bf16 };
inline constexpr Precision kPrecisions[] = {Precision::fp32, Precision::tf32, Precision::bf16};
std::string_view to_string(Precision p);
// "fp32", "tf32" or "bf16"; nullopt otherwise.
std::optional<Precision> parse_precision(std::string_view s);
// Bytes per element of the product's inputs (4, 4, 2).
int element_bytes(Precision p);

struct GemmTable {
  std::vector<int64_t> sizes;   // ascending, each >= 1
  std::vector<double> seconds;  // sizes^3 entries, index (i * S + j) * S + l for sizes[i, j, l] = (m, n, k)

  bool empty() const { return sizes.empty(); }
  // Why the table cannot be used ("" when it can): sizes not ascending or < 1, a seconds count
  // other than sizes^3, a time that is not positive and finite.
  std::string problem() const;
  double at(size_t i, size_t j, size_t l) const { return seconds[(i * sizes.size() + j) * sizes.size() + l]; }
  // FLOP/s the table gives for one product (m, n, k), interpolated as above. Requires a usable
  // table and positive dimensions (checked).
  double rate(double m, double n, double k) const;
  // Seconds of `count` products (m, n, k), as above.
  double product_seconds(double m, double n, double k, double count = 1) const;
  // The highest measured rate (FLOP/s).
  double best_rate() const;
};

}  // namespace pw::models
