// How gemm() states a row-major product to cuBLASLt (exec/cuda/gemm.h: lt_plan), on the host:
// cuBLASLt's column-major semantics, run on the layouts lt_plan gives, must compute gemm.h's
// row-major product for every transpose combination, padded leading dimensions and batch
// strides. No GPU needed.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "exec/cuda/gemm.h"

namespace pw::exec::cuda {
namespace {

// Element (r, c) of a column-major matrix, as cuBLASLt reads it.
double col_major(const std::vector<float>& v, int64_t offset, int64_t r, int64_t c, int64_t ld) {
  return v.at(static_cast<size_t>(offset + c * ld + r));
}

// cuBLASLt's D = op(A)·op(B), column-major, batch member `member`, on lt_plan's layouts: its A is
// our B, its B our A. Checks the layouts are consistent with the product's dimensions.
std::vector<double> lt_product(const LtPlan& p, const std::vector<float>& our_a, const std::vector<float>& our_b,
                               int64_t member) {
  // op(A) is [rows of D, k], op(B) [k, cols of D].
  const int64_t rows = p.c.rows, cols = p.c.cols;
  const int64_t ka = p.trans_a ? p.a.rows : p.a.cols;
  const int64_t kb = p.trans_b ? p.b.cols : p.b.rows;
  REQUIRE(ka == kb);
  CHECK((p.trans_a ? p.a.cols : p.a.rows) == rows);
  CHECK((p.trans_b ? p.b.rows : p.b.cols) == cols);
  CHECK(p.a.ld >= p.a.rows);
  CHECK(p.b.ld >= p.b.rows);
  CHECK(p.c.ld >= p.c.rows);
  std::vector<double> d(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < ka; ++k) {
        const int64_t oa = member * p.a.batch_stride, ob = member * p.b.batch_stride;
        const double av = p.trans_a ? col_major(our_b, oa, k, i, p.a.ld) : col_major(our_b, oa, i, k, p.a.ld);
        const double bv = p.trans_b ? col_major(our_a, ob, j, k, p.b.ld) : col_major(our_a, ob, k, j, p.b.ld);
        acc += av * bv;
      }
      d[static_cast<size_t>(j * rows + i)] = acc;  // column-major [rows, cols]
    }
  return d;
}

// gemm.h's row-major C[i, j] = sum_p op(A)[i, p] op(B)[p, j] for one batch member.
double row_major(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b, int64_t member,
                 int64_t i, int64_t j) {
  const int64_t lda = s.lda ? s.lda : (s.trans_a ? s.m : s.k);
  const int64_t ldb = s.ldb ? s.ldb : (s.trans_b ? s.k : s.n);
  double acc = 0;
  for (int64_t p = 0; p < s.k; ++p) {
    const double av = a.at(static_cast<size_t>(member * s.stride_a + (s.trans_a ? p * lda + i : i * lda + p)));
    const double bv = b.at(static_cast<size_t>(member * s.stride_b + (s.trans_b ? j * ldb + p : p * ldb + j)));
    acc += av * bv;
  }
  return acc;
}

std::vector<float> ramp(int64_t n, int64_t salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * 7 + salt) % 13) - 6.0f;
  return v;
}

void check_plan(GemmShape s) {
  INFO("m " << s.m << " n " << s.n << " k " << s.k << " trans " << s.trans_a << s.trans_b << " ld " << s.lda << ","
            << s.ldb << "," << s.ldc << " batch " << s.batch);
  REQUIRE(gemm_shape_problem(s).empty());
  const int64_t lda = s.lda ? s.lda : (s.trans_a ? s.m : s.k);
  const int64_t ldb = s.ldb ? s.ldb : (s.trans_b ? s.k : s.n);
  const int64_t ldc = s.ldc ? s.ldc : s.n;
  const int64_t a_rows = s.trans_a ? s.k : s.m, b_rows = s.trans_b ? s.n : s.k;
  const std::vector<float> a = ramp(s.stride_a * (s.batch - 1) + a_rows * lda, 1);
  const std::vector<float> b = ramp(s.stride_b * (s.batch - 1) + b_rows * ldb, 5);
  const LtPlan p = lt_plan(s);
  CHECK(p.batch == s.batch);
  CHECK(p.c.rows == s.n);
  CHECK(p.c.cols == s.m);
  CHECK(p.c.ld == ldc);
  CHECK(p.c.batch_stride == s.stride_c);
  for (int64_t member = 0; member < s.batch; ++member) {
    const std::vector<double> d = lt_product(p, a, b, member);
    int64_t wrong = 0;
    // cuBLASLt's column-major D [n, m] element (j, i) is our row-major C[i, j] (same ld).
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j)
        wrong += d[static_cast<size_t>(i * s.n + j)] != row_major(s, a, b, member, i, j);
    CHECK(wrong == 0);
  }
}

TEST_CASE("lt_plan: cuBLASLt's column-major product on its layouts is gemm's row-major product") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      GemmShape s;
      s.m = 5;
      s.n = 3;
      s.k = 4;
      s.trans_a = ta;
      s.trans_b = tb;
      check_plan(s);  // packed
      s.lda = (ta ? s.m : s.k) + 2;
      s.ldb = (tb ? s.k : s.n) + 3;
      s.ldc = s.n + 1;
      check_plan(s);  // padded rows (strided views)
      s.batch = 3;
      s.stride_a = 40;
      s.stride_b = 30;
      s.stride_c = 20;
      check_plan(s);  // batched
    }
}

TEST_CASE("lt_plan: the layouts of a linear layer's three products, by hand") {
  // y[rows, out] = x[rows, in] · wᵀ, w stored [out, in]: cuBLASLt's A is w, column-major
  // [in, out] (ld in), transposed; its B is x, column-major [in, rows] (ld in); D [out, rows].
  GemmShape f;
  f.m = 8;
  f.n = 3;
  f.k = 5;
  f.trans_b = true;
  const LtPlan p = lt_plan(f);
  CHECK(p.trans_a);
  CHECK(!p.trans_b);
  CHECK((p.a.rows == 5 && p.a.cols == 3 && p.a.ld == 5));
  CHECK((p.b.rows == 5 && p.b.cols == 8 && p.b.ld == 5));
  CHECK((p.c.rows == 3 && p.c.cols == 8 && p.c.ld == 3));
  // gw[out, in] += dyᵀ · x, dy stored [rows, out]: cuBLASLt's B is dy, column-major [out, rows]
  // (ld out), transposed.
  GemmShape w;
  w.m = 3;
  w.n = 5;
  w.k = 8;
  w.trans_a = true;
  const LtPlan q = lt_plan(w);
  CHECK(!q.trans_a);
  CHECK(q.trans_b);
  CHECK((q.b.rows == 3 && q.b.cols == 8 && q.b.ld == 3));
  CHECK((q.a.rows == 5 && q.a.cols == 8 && q.a.ld == 5));
}

}  // namespace
}  // namespace pw::exec::cuda
