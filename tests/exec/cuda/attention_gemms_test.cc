// The device attention's product plan (exec/cuda/attention_gemms.h) and gemm_shape_problem, on
// the host: the six products run by a reference of GemmShape's documented semantics, with the
// causal softmax written out, must reproduce the CPU AttentionCore, and every output element
// must be written by exactly one product member (the views tile their tensors). No GPU needed.
#include "exec/cuda/attention_gemms.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "exec/layers/attention.h"
#include "exec/layers/common.h"
#include "models/error.h"

namespace pw::exec::cuda {
namespace {

// C = op(A)·op(B) per group and batch member, as gemm.h defines it (beta 0), in double; counts
// how often each element of the C tensor [0, c_size) is written.
void reference_gemm(const ViewProduct& p, const float* a, const float* b, float* c, int64_t c_size,
                    std::vector<int>& writes) {
  const GemmShape& s = p.shape;
  const int64_t lda = s.lda ? s.lda : (s.trans_a ? s.m : s.k);
  const int64_t ldb = s.ldb ? s.ldb : (s.trans_b ? s.k : s.n);
  const int64_t ldc = s.ldc ? s.ldc : s.n;
  for (int64_t g = 0; g < s.groups; ++g)
    for (int64_t m = 0; m < s.batch; ++m) {
      const float* am = a + p.a_offset + g * s.group_stride_a + m * s.stride_a;
      const float* bm = b + p.b_offset + g * s.group_stride_b + m * s.stride_b;
      const int64_t c0 = p.c_offset + g * s.group_stride_c + m * s.stride_c;
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < s.k; ++k) {
            const double av = s.trans_a ? am[k * lda + i] : am[i * lda + k];
            const double bv = s.trans_b ? bm[j * ldb + k] : bm[k * ldb + j];
            acc += av * bv;
          }
          const int64_t at = c0 + i * ldc + j;
          REQUIRE(at >= 0);
          REQUIRE(at < c_size);
          c[at] = static_cast<float>(acc);
          ++writes[static_cast<size_t>(at)];
        }
    }
}

// Runs products that together write all of c; each element exactly once.
void run_covering(const std::vector<const ViewProduct*>& ps, const std::vector<const Tensor*>& as,
                  const std::vector<const Tensor*>& bs, Tensor& c) {
  std::vector<int> writes(static_cast<size_t>(c.numel()), 0);
  for (size_t i = 0; i < ps.size(); ++i)
    reference_gemm(*ps[i], as[i]->data(), bs[i]->data(), c.data(), c.numel(), writes);
  int64_t wrong = 0;
  for (int w : writes) wrong += w != 1;
  CHECK(wrong == 0);
}

Tensor random_values(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(std::move(shape));
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(2 * rng.uniform() - 1);
  return t;
}

double rel_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = static_cast<double>(got.data()[i]) - want.data()[i];
    num += d * d;
    den += static_cast<double>(want.data()[i]) * want.data()[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

// The kernels' formulas (kernels.h: causal_softmax_forward / _backward), in double.
void causal_softmax(Tensor& p, int64_t seq, double scale) {
  for (int64_t r = 0; r < p.numel() / seq; ++r) {
    float* row = p.data() + r * seq;
    const int64_t n = r % seq + 1;
    double mx = row[0], sum = 0;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, static_cast<double>(row[j]));
    for (int64_t j = 0; j < n; ++j) sum += std::exp((row[j] - mx) * scale);
    for (int64_t j = 0; j < seq; ++j) row[j] = j < n ? static_cast<float>(std::exp((row[j] - mx) * scale) / sum) : 0;
  }
}

void causal_softmax_backward(const Tensor& p, Tensor& d, int64_t seq, double scale) {
  for (int64_t r = 0; r < p.numel() / seq; ++r) {
    const float* pr = p.data() + r * seq;
    float* dr = d.data() + r * seq;
    const int64_t n = r % seq + 1;
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += static_cast<double>(pr[j]) * dr[j];
    for (int64_t j = 0; j < seq; ++j) dr[j] = j < n ? static_cast<float>(pr[j] * (dr[j] - dot) * scale) : 0;
  }
}

void check_against_cpu(int64_t batch, int64_t seq, int64_t d, int64_t heads) {
  INFO("batch " << batch << ", seq " << seq << ", d_model " << d << ", heads " << heads);
  const AttentionGemms g = attention_gemms(batch, seq, d, heads);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d / heads));
  const Tensor qkv = random_values({batch, seq, 3 * d}, 11), dout = random_values({batch, seq, d}, 12);

  Tensor probs({batch, heads, seq, seq}), out({batch, seq, d});
  run_covering({&g.scores}, {&qkv}, {&qkv}, probs);
  causal_softmax(probs, seq, scale);
  run_covering({&g.mix}, {&probs}, {&qkv}, out);

  Tensor ds({batch, heads, seq, seq}), dqkv({batch, seq, 3 * d});
  run_covering({&g.d_probs}, {&dout}, {&qkv}, ds);
  causal_softmax_backward(probs, ds, seq, scale);
  run_covering({&g.d_q, &g.d_k, &g.d_v}, {&ds, &ds, &probs}, {&qkv, &qkv, &dout}, dqkv);

  AttentionCore cpu(seq, d, heads);
  Context ctx;
  const Tensor want_out = cpu.forward(qkv, ctx);
  const Tensor want_dqkv = cpu.backward(qkv, ctx, dout);
  CHECK(rel_error(probs, ctx.saved.at(0)) < 1e-5);
  CHECK(rel_error(out, want_out) < 1e-5);
  CHECK(rel_error(dqkv, want_dqkv) < 1e-5);
}

TEST_CASE("attention_gemms: the score product of batch 2, seq 3, d_model 4, heads 2 by hand") {
  const GemmShape s = attention_gemms(2, 3, 4, 2).scores.shape;
  const ViewProduct p = attention_gemms(2, 3, 4, 2).scores;
  CHECK(s.m == 3);
  CHECK(s.n == 3);
  CHECK(s.k == 2);  // dh
  CHECK(!s.trans_a);
  CHECK(s.trans_b);    // kᵀ: k rows read as columns
  CHECK(s.lda == 12);  // qkv rows are 3 * d_model apart
  CHECK(s.ldb == 12);
  CHECK(s.ldc == 3);
  CHECK(s.batch == 2);
  CHECK(s.stride_a == 36);  // one sample of qkv: seq * 3 * d_model
  CHECK(s.stride_c == 18);  // one sample of probs: heads * seq * seq
  CHECK(s.groups == 2);
  CHECK(s.group_stride_a == 2);  // the next head: dh columns on
  CHECK(s.group_stride_c == 9);
  CHECK(p.a_offset == 0);
  CHECK(p.b_offset == 4);  // k starts d_model columns into qkv
  CHECK(p.c_offset == 0);
}

TEST_CASE("attention_gemms: the products reproduce the CPU AttentionCore and tile their outputs") {
  check_against_cpu(3, 7, 32, 4);
  check_against_cpu(2, 16, 64, 2);
  check_against_cpu(1, 1, 6, 3);
  check_against_cpu(2, 5, 8, 1);
}

TEST_CASE("attention_gemms: every product is a valid gemm, and bad sizes are refused") {
  const AttentionGemms g = attention_gemms(4, 9, 48, 6);
  for (const ViewProduct* p : {&g.scores, &g.mix, &g.d_v, &g.d_probs, &g.d_q, &g.d_k})
    CHECK(gemm_shape_problem(p->shape) == "");
  CHECK_THROWS_WITH_AS(attention_gemms(2, 4, 30, 4), doctest::Contains("d_model a multiple of heads"), InputError);
  CHECK_THROWS_AS(attention_gemms(0, 4, 32, 4), InputError);
  CHECK_THROWS_AS(attention_gemms(2, 0, 32, 4), InputError);
}

TEST_CASE("gemm_shape_problem names what is wrong") {
  GemmShape s;
  s.m = 4;
  s.n = 5;
  s.k = 6;
  CHECK(gemm_shape_problem(s) == "");
  s.lda = 5;
  CHECK(gemm_shape_problem(s) == "gemm lda below the row length of A");
  s.trans_a = true;  // A stored [k, m]: rows of m = 4 elements
  CHECK(gemm_shape_problem(s) == "");
  s.ldb = 4;
  CHECK(gemm_shape_problem(s) == "gemm ldb below the row length of B");
  s.ldb = 0;
  s.ldc = 4;
  CHECK(gemm_shape_problem(s) == "gemm ldc below the row length of C");
  s.ldc = 0;
  s.groups = 0;
  CHECK(gemm_shape_problem(s) == "gemm batch and group counts must be >= 1");
  s.groups = 2;
  s.group_stride_b = -1;
  CHECK(gemm_shape_problem(s) == "gemm strides must be >= 0");
  s.group_stride_b = 0;
  s.k = 0;
  CHECK(gemm_shape_problem(s) == "gemm sizes must be >= 1");
}

}  // namespace
}  // namespace pw::exec::cuda
