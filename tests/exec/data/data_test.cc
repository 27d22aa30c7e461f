// The synthetic data sources (exec/data/data.h) and their approximately normal noise
// (exec/data/fast_normal.h): seeded, sample-sequential, restorable, and of the stated moments.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "exec/data/data.h"
#include "exec/data/fast_normal.h"
#include "exec/data/fast_tanh.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

using models::LayerKind;
using models::LayerSpec;

models::Model zoo(const std::string& family) {
  models::ZooOptions z;
  z.batch = 8;
  z.layers = 1;
  z.d_model = 16;
  z.heads = 2;
  z.ffn = 32;
  z.seq = 8;
  z.vocab = 256;
  z.depth = 2;
  z.width = 48;
  z.image = 32;
  z.width_divisor = 16;
  z.classes = 4;
  return models::build_zoo_model(family, z);
}

// input [12] -> linear -> softmax_xent over 5 classes: the flat synthetic classification.
models::Model flat_classifier() {
  LayerSpec in{"input", LayerKind::input, {}, {12}, {}};
  LayerSpec fc{"fc", LayerKind::linear, {"input"}, {5}, {{"in", 12}, {"out", 5}}};
  LayerSpec loss{"loss", LayerKind::softmax_xent, {"fc"}, {1}, {{"classes", 5}, {"rows", 1}}};
  return models::Model("flat", {in, fc, loss}, 8);
}

bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.bytes())) == 0;
}

// Rows [first, first + count) of t equal u's rows.
bool same_rows(const Tensor& t, int64_t first, const Tensor& u) {
  const int64_t row = t.numel() / t.dim(0);
  return std::memcmp(t.data() + first * row, u.data(), static_cast<size_t>(u.numel()) * sizeof(float)) == 0;
}

std::vector<models::Model> every_kind() { return {zoo("mlp"), flat_classifier(), zoo("vgg16"), zoo("gpt")}; }

}  // namespace

TEST_CASE("approx_normal: mean 0 and variance 1 within sampling error, bounded by 2 sqrt(3)") {
  Rng r(7);
  const int n = 1 << 20;
  std::vector<float> x(n);
  fill_approx_normal(x.data(), n, r);
  double sum = 0, sq = 0, quad = 0;
  float lo = 0, hi = 0;
  for (float v : x) {
    sum += v;
    sq += double(v) * v;
    quad += double(v) * v * v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  CHECK(std::fabs(mean) < 5.0 / std::sqrt(double(n)));  // 5 standard errors
  CHECK(var == doctest::Approx(1.0).epsilon(0.01));
  CHECK(quad / n == doctest::Approx(2.7).epsilon(0.02));  // Irwin-Hall(4): kurtosis 3 - 1.2 / 4
  CHECK(lo >= -2 * std::sqrt(3.0f));
  CHECK(hi <= 2 * std::sqrt(3.0f));
  CHECK(lo < -3.0f);  // the tails are there
  CHECK(hi > 3.0f);
}

TEST_CASE("fast_tanh: within 3e-7 of std::tanh everywhere, odd, saturating") {
  double worst = 0;
  for (int i = -200000; i <= 200000; ++i) {
    const float x = static_cast<float>(i) * 1e-4f;  // [-20, 20], dense around 0 and the switch at 1/16
    const double err = std::fabs(static_cast<double>(fast_tanh(x)) - std::tanh(static_cast<double>(x)));
    worst = std::max(worst, err);
    CHECK(fast_tanh(-x) == -fast_tanh(x));
  }
  CAPTURE(worst);  // 1.34e-7 when written
  CHECK(worst < 3e-7);
  CHECK(fast_tanh(0.0f) == 0.0f);
  CHECK(fast_tanh(1e-30f) == 1e-30f);
  CHECK(fast_tanh(100.0f) == 1.0f);
  CHECK(fast_tanh(-1e30f) == -1.0f);
}

TEST_CASE("fill_approx_normal: n values then m values equal n + m values, one Rng draw each") {
  Rng a(3), b(3);
  std::vector<float> x(100), y(100);
  fill_approx_normal(x.data(), 37, a);
  fill_approx_normal(x.data() + 37, 63, a);
  fill_approx_normal(y.data(), 100, b);
  CHECK(std::memcmp(x.data(), y.data(), sizeof(float) * 100) == 0);
  Rng c(3);
  for (int i = 0; i < 100; ++i) c.next();
  CHECK(a.state() == c.state());
}

TEST_CASE("every data source: a seed gives the same batches, and next(a) + next(b) = next(a + b)") {
  for (const models::Model& m : every_kind()) {
    CAPTURE(m.name());
    auto one = make_data_source(m, "", 5), two = make_data_source(m, "", 5), other = make_data_source(m, "", 6);
    const Batch whole = one->next(7);
    const Batch a = two->next(3), b = two->next(4);
    CHECK(same_rows(whole.data, 0, a.data));
    CHECK(same_rows(whole.data, 3, b.data));
    CHECK(same_rows(whole.targets, 0, a.targets));
    CHECK(same_rows(whole.targets, 3, b.targets));
    CHECK(one->state().rng == two->state().rng);
    CHECK_FALSE(same(whole.data, other->next(7).data));
  }
}

TEST_CASE("every data source: restore(state) continues with exactly the batches that followed") {
  for (const models::Model& m : every_kind()) {
    CAPTURE(m.name());
    auto src = make_data_source(m, "", 11);
    src->next(4);
    const DataState at = src->state();
    const Batch b1 = src->next(4), b2 = src->next(2);
    auto again = make_data_source(m, "", 11);
    again->restore(at);
    CHECK(again->state().batches == 1);
    const Batch c1 = again->next(4), c2 = again->next(2);
    CHECK(same(b1.data, c1.data));
    CHECK(same(b1.targets, c1.targets));
    CHECK(same(b2.data, c2.data));
    CHECK(same(b2.targets, c2.targets));
  }
}

TEST_CASE("synthetic regression: targets are tanh of a unit-variance teacher output, so they spread") {
  auto src = make_data_source(zoo("mlp"), "", 1);
  CHECK(src->describe() == "synthetic regression (48 outputs, random rank-32 teacher)");
  const Batch b = src->next(64);
  double sq = 0;
  for (int64_t i = 0; i < b.targets.numel(); ++i) {
    CHECK(std::fabs(b.targets.data()[i]) < 1.0f);
    sq += double(b.targets.data()[i]) * b.targets.data()[i];
  }
  // E[tanh(z)^2] for z ~ N(0, 1) is 0.394; a teacher of the stated scale lands near it.
  CHECK(sq / double(b.targets.numel()) == doctest::Approx(0.394).epsilon(0.15));
}

TEST_CASE("synthetic classification: every class occurs, targets are class ids") {
  auto src = make_data_source(flat_classifier(), "", 1);
  CHECK(src->describe() == "synthetic classification (5 classes, random rank-5 teacher)");
  const Batch b = src->next(500);
  std::vector<int> count(5, 0);
  for (int64_t i = 0; i < 500; ++i) {
    const float t = b.targets.data()[i];
    REQUIRE(t == std::floor(t));
    REQUIRE(t >= 0);
    REQUIRE(t < 5);
    ++count[static_cast<int>(t)];
  }
  for (int c : count) CHECK(c > 25);  // no class starved (expected ~100 each)
}

}  // namespace pw::exec
