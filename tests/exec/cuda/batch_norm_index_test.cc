// The CUDA batch_norm's per-element formulas and index math (exec/cuda/batch_norm_index.h) on
// the host: the kernels' passes written as loops over them (the reductions as plain double
// sums) reproduce the oneDNN batch_norm with random gamma / beta and statistics groups:
// forward, input gradient, dgamma / dbeta and the running statistics. No GPU needed.
#include "exec/cuda/batch_norm_index.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "exec/cuda/conv_plan.h"
#include "exec/layers/batch_norm.h"
#include "tests/exec/layers/grad_check.h"

namespace pw::exec::cuda {
namespace {

using pw::exec::testing::random_tensor;

double rel(const float* got, const float* want, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += std::pow(double(got[i]) - want[i], 2);
    den += std::pow(double(want[i]), 2);
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

TEST_CASE("batch_norm index math: group sizes, element positions, statistics slots") {
  BatchNormShape s;
  s.batch = 8;
  s.c = 3;
  s.spatial = 4;
  s.group = 3;
  s.groups = 3;
  CHECK(bn_group_samples(s, 0) == 3);
  CHECK(bn_group_samples(s, 2) == 2);
  // group 1 starts at sample 3; element 5 of channel 2 is sample 4, position 1
  CHECK(bn_element(s, 1, 2, 5) == (4 * 3 + 2) * 4 + 1);
  CHECK(bn_stat_slot(s, (4 * 3 + 2) * 4 + 1) == 1 * 3 + 2);
  CHECK(bn_stat_slot(s, (7 * 3 + 0) * 4 + 3) == 2 * 3 + 0);
  CHECK(bn_unbias(s, 2) == doctest::Approx(8.0 / 7.0));
}

TEST_CASE("batch_norm kernels' formulas on the host equal the oneDNN batch_norm with groups") {
  for (int64_t group : {0, 3}) {
    INFO("group " << group);
    const std::vector<int64_t> sample{6, 5, 7};
    auto cpu =
        make_layer(pw::exec::testing::spec("bn", models::LayerKind::batch_norm, {"x"}, sample, {{"c", 6}}), {sample});
    auto& bn = dynamic_cast<BatchNorm&>(*cpu);
    bn.set_statistics_group(group);
    const Tensor gamma = random_tensor({6}, 31, 0.5, 1.5), beta = random_tensor({6}, 32);
    std::memcpy(cpu->parameters()[0]->data(), gamma.data(), 6 * sizeof(float));
    std::memcpy(cpu->parameters()[1]->data(), beta.data(), 6 * sizeof(float));
    std::vector<float> rm(6, 0.0f), rv(6, 1.0f);
    for (int step = 0; step < 2; ++step) {
      const Tensor x = random_tensor({8, 6, 5, 7}, 40 + step, -2, 3), dy = random_tensor({8, 6, 5, 7}, 50 + step);
      std::vector<const Tensor*> in{&x};
      Context ctx;
      const Tensor want_y = cpu->forward(in, ctx);
      cpu->zero_grad();
      const Tensor want_dx = std::move(cpu->backward(in, ctx, dy)[0]);

      const StatGroups sg = stat_groups(8, group);
      BatchNormShape s{8, 6, 35, sg.size, sg.count};
      const int64_t n = x.numel();
      std::vector<float> mean(s.groups * 6), var(s.groups * 6), part(s.groups * 12), y(n), dx(n);
      for (int64_t k = 0; k < s.groups; ++k)
        for (int64_t c = 0; c < 6; ++c) {
          const int64_t m = bn_group_samples(s, k) * s.spatial;
          double sum = 0, sq = 0, dg = 0, db = 0;
          for (int64_t j = 0; j < m; ++j) sum += x.data()[bn_element(s, k, c, j)];
          const double mu = sum / double(m);
          for (int64_t j = 0; j < m; ++j) sq += std::pow(x.data()[bn_element(s, k, c, j)] - mu, 2);
          mean[k * 6 + c] = static_cast<float>(mu);
          var[k * 6 + c] = static_cast<float>(sq / double(m));
          const float rstd = 1.0f / std::sqrt(var[k * 6 + c] + kBatchNormEps);
          for (int64_t j = 0; j < m; ++j) {
            const int64_t e = bn_element(s, k, c, j);
            dg += double(dy.data()[e]) * ((x.data()[e] - mean[k * 6 + c]) * rstd);
            db += dy.data()[e];
          }
          part[(k * 2) * 6 + c] = static_cast<float>(dg);
          part[(k * 2 + 1) * 6 + c] = static_cast<float>(db);
        }
      for (int64_t i = 0; i < n; ++i) {
        y[i] = bn_forward_element(x.data(), gamma.data(), beta.data(), mean.data(), var.data(), s, i);
        dx[i] = bn_input_grad_element(x.data(), dy.data(), gamma.data(), mean.data(), var.data(), part.data(), s, i);
      }
      std::vector<float> dgb(12, 0.0f);
      for (int64_t c = 0; c < 6; ++c)
        for (int64_t k = 0; k < s.groups; ++k) {
          dgb[c] += part[(k * 2) * 6 + c];
          dgb[6 + c] += part[(k * 2 + 1) * 6 + c];
          const float keep = 1.0f - BatchNorm::kMomentum;
          rm[c] = keep * rm[c] + BatchNorm::kMomentum * mean[k * 6 + c];
          rv[c] = keep * rv[c] + BatchNorm::kMomentum * bn_unbias(s, k) * var[k * 6 + c];
        }
      CHECK(rel(y.data(), want_y.data(), n) < 1e-5);
      CHECK(rel(dx.data(), want_dx.data(), n) < 1e-5);
      CHECK(rel(dgb.data(), cpu->gradients()[0]->data(), 6) < 1e-5);
      CHECK(rel(dgb.data() + 6, cpu->gradients()[1]->data(), 6) < 1e-5);
      CHECK(rel(rm.data(), bn.running_mean().data(), 6) < 1e-5);
      CHECK(rel(rv.data(), bn.running_var().data(), 6) < 1e-5);
    }
  }
}

}  // namespace
}  // namespace pw::exec::cuda
