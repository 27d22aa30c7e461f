#include "models/gemm_table.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/error.h"

namespace pw::models {

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view s) {
  for (Precision p : kPrecisions)
    if (to_string(p) == s) return p;
  return std::nullopt;
}

int element_bytes(Precision p) { return p == Precision::bf16 ? 2 : 4; }

std::string GemmTable::problem() const {
  if (sizes.empty()) return "no sizes";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1) return "size " + std::to_string(sizes[i]) + " is below 1";
    if (i > 0 && sizes[i] <= sizes[i - 1]) return "sizes are not strictly ascending";
  }
  const size_t s = sizes.size();
  if (seconds.size() != s * s * s)
    return "expected " + std::to_string(s * s * s) + " times (sizes^3), got " + std::to_string(seconds.size());
  for (double t : seconds)
    if (!(t > 0) || !std::isfinite(t)) return "a time is not a positive finite number";
  return "";
}

namespace {

// The cell of log2(x) among log2(sizes) and the weight of the upper corner, x clamped.
struct Axis {
  size_t lo = 0, hi = 0;
  double w = 0;
};

Axis locate(const std::vector<int64_t>& sizes, double x) {
  const double front = double(sizes.front()), back = double(sizes.back());
  if (sizes.size() == 1 || x <= front) return {0, 0, 0};
  if (x >= back) return {sizes.size() - 1, sizes.size() - 1, 0};
  size_t hi = 1;
  while (double(sizes[hi]) < x) ++hi;
  const double a = std::log2(double(sizes[hi - 1])), b = std::log2(double(sizes[hi]));
  return {hi - 1, hi, (std::log2(x) - a) / (b - a)};
}

double flops_at(const GemmTable& t, size_t i, size_t j, size_t l) {
  return 2.0 * double(t.sizes[i]) * double(t.sizes[j]) * double(t.sizes[l]);
}

}  // namespace

double GemmTable::rate(double m, double n, double k) const {
  PW_CHECK(problem().empty(), "GemmTable::rate on an unusable table: " + problem());
  PW_CHECK(m > 0 && n > 0 && k > 0, "GEMM dimensions must be positive");
  const std::array<Axis, 3> ax{locate(sizes, m), locate(sizes, n), locate(sizes, k)};
  double log_rate = 0;
  for (int corner = 0; corner < 8; ++corner) {
    double w = 1;
    std::array<size_t, 3> idx{};
    for (int d = 0; d < 3; ++d) {
      const bool upper = (corner >> d) & 1;
      w *= upper ? ax[d].w : 1 - ax[d].w;
      idx[d] = upper ? ax[d].hi : ax[d].lo;
    }
    if (w == 0) continue;
    log_rate += w * std::log(flops_at(*this, idx[0], idx[1], idx[2]) / at(idx[0], idx[1], idx[2]));
  }
  return std::exp(log_rate);
}

double GemmTable::product_seconds(double m, double n, double k, double count) const {
  PW_CHECK(count > 0, "GEMM count must be positive");
  const double rows = m * count, s0 = double(sizes.front());
  return 2.0 * std::max(rows, s0) * std::max(n, s0) * std::max(k, s0) / rate(rows, n, k);
}

double GemmTable::best_rate() const {
  double best = 0;
  for (size_t i = 0; i < sizes.size(); ++i)
    for (size_t j = 0; j < sizes.size(); ++j)
      for (size_t l = 0; l < sizes.size(); ++l) best = std::max(best, flops_at(*this, i, j, l) / at(i, j, l));
  return best;
}

}  // namespace pw::models
