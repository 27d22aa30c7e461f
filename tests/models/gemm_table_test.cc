#include "models/gemm_table.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace pw::models;

namespace {

// sizes {64, 256}: every product at 1 GFLOP/s except (256, 256, 256) at 16 GFLOP/s.
GemmTable two_by_two() {
  GemmTable t;
  t.sizes = {64, 256};
  for (int64_t m : t.sizes)
    for (int64_t n : t.sizes)
      for (int64_t k : t.sizes) {
        const double rate = (m == 256 && n == 256 && k == 256) ? 16e9 : 1e9;
        t.seconds.push_back(2.0 * double(m) * double(n) * double(k) / rate);
      }
  return t;
}

}  // namespace

TEST_CASE("GEMM table: grid points, log-space interpolation, clamping, batches, by hand") {
  const GemmTable t = two_by_two();
  REQUIRE(t.problem().empty());
  CHECK(t.rate(64, 64, 64) == doctest::Approx(1e9));
  CHECK(t.rate(256, 256, 256) == doctest::Approx(16e9));
  CHECK(t.best_rate() == doctest::Approx(16e9));
  // Half-way in log2 on every axis: each corner weighs 1/8, so the rate is 1e9 x 16^(1/8).
  CHECK(t.rate(128, 128, 128) == doctest::Approx(1e9 * std::sqrt(2.0)).epsilon(1e-12));
  // Half-way on one axis only, between 1 and 16 GFLOP/s: 4 GFLOP/s.
  CHECK(t.rate(256, 256, 128) == doctest::Approx(4e9).epsilon(1e-12));
  // Beyond the grid the edge's rate holds; the product's own FLOPs count.
  CHECK(t.product_seconds(1024, 256, 256) == doctest::Approx(2.0 * 1024 * 256 * 256 / 16e9).epsilon(1e-12));
  // Below the smallest size a product costs what the smallest costs.
  CHECK(t.product_seconds(8, 64, 64) == doctest::Approx(2.0 * 64 * 64 * 64 / 1e9).epsilon(1e-12));
  CHECK(t.product_seconds(8, 2, 1) == t.product_seconds(64, 64, 64));
  // A batch of 4 fills the machine like 4 x 64 = 256 rows.
  CHECK(t.product_seconds(64, 256, 256, 4) == doctest::Approx(2.0 * 256 * 256 * 256 / 16e9).epsilon(1e-12));
  CHECK(t.product_seconds(64, 256, 256, 4) < 4 * t.product_seconds(64, 256, 256));
}

TEST_CASE("GEMM table: a single size is one rate everywhere") {
  GemmTable t;
  t.sizes = {128};
  t.seconds = {2.0 * 128 * 128 * 128 / 5e9};
  CHECK(t.rate(1, 100000, 7) == doctest::Approx(5e9));
  CHECK(t.product_seconds(256, 256, 256) == doctest::Approx(2.0 * 256 * 256 * 256 / 5e9));
}

TEST_CASE("GEMM table: unusable tables say why") {
  GemmTable t = two_by_two();
  t.seconds.pop_back();
  CHECK(t.problem() == "expected 8 times (sizes^3), got 7");
  t = two_by_two();
  t.seconds[3] = 0;
  CHECK(t.problem() == "a time is not a positive finite number");
  t = two_by_two();
  t.sizes = {256, 64};
  CHECK(t.problem() == "sizes are not strictly ascending");
  t.sizes = {0, 64};
  CHECK(t.problem() == "size 0 is below 1");
  CHECK(GemmTable{}.problem() == "no sizes");
}

TEST_CASE("precision names") {
  for (Precision p : kPrecisions) CHECK(parse_precision(to_string(p)) == p);
  CHECK_FALSE(parse_precision("fp64").has_value());
  CHECK(element_bytes(Precision::bf16) == 2);
  CHECK(element_bytes(Precision::tf32) == 4);
}
