// fp32 matrix products through cuBLASLt, in row-major terms:
//
//   C[m, n] = op(A)[m, k] · op(B)[k, n] + beta · C  (+ bias[n] on every row) (then GELU)
//
// op(A) = A stored [m, k] (lda >= k) or, with trans_a, A stored [k, m] (lda >= m); likewise B
// ([k, n], or [n, k] with trans_b); C stored [m, n] (ldc >= n). Leading dimensions default to
// the packed ones (0). batch > 1: `batch` independent products at the given element strides.
// groups > 1: a second batch level, `groups` batched products, group g reading A at
// a + g * group_stride_a (likewise B, C); one cuBLASLt call per group, queued in group order.
// Strided views of one tensor (attention's heads: rows of stride ld, groups dh apart) are
// products of this form.
//
// Epilogues run inside the GEMM: bias (a [n] vector), gelu (tanh approximation, as the gelu
// layer) and bias_gelu (bias, then GELU). beta must be 0 with a GELU epilogue. cuBLASLt may
// evaluate the epilogue's tanh with the hardware approximation, so a GELU epilogue is not the
// gelu kernel's bits (the layers use the kernel).
//
// Precision: full fp32 unless the device's tf32() is on (CUBLAS_COMPUTE_32F_FAST_TF32).
// Determinism: one algorithm per shape (the heuristic's first choice, cached), so the same call
// gives the same bits every time on the same GPU.
//
// Work is queued on the device's compute stream. Thread-safety: as CudaDevice (one thread per
// device at a time).
#pragma once

#include <cstdint>
#include <string>

#include "exec/cuda/cuda_device.h"

namespace pw::exec::cuda {

enum class Epilogue { none, bias, gelu, bias_gelu };

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0: packed
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch members
  int64_t groups = 1;
  int64_t group_stride_a = 0, group_stride_b = 0, group_stride_c = 0;  // elements between groups
};

// Why the shape is not a product gemm() runs ("" when it is): a size, batch or group count
// below 1, a leading dimension below its packed value, a negative stride. Pure host code.
std::string gemm_shape_problem(const GemmShape& shape);

// How gemm() states one product (groups = 1) to cuBLASLt, which is column-major: its operand A
// is our B, its B our A, and its C (= D) [n, m] is our C, since the row-major C = op(A)·op(B) is
// the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ. Each matrix as cuBLASLt's layout sees it (rows and
// columns as stored, column-major; leading dimension; batch stride in elements), and the
// operations on cuBLASLt's A and B. Pure host code (the layout math is tested without a GPU).
struct LtMatrix {
  int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;
};
struct LtPlan {
  bool trans_a = false, trans_b = false;  // cuBLASLt's TRANSA (on our B) and TRANSB (on our A)
  LtMatrix a, b, c;
  int64_t batch = 1;
};
LtPlan lt_plan(const GemmShape& shape);

void gemm(CudaDevice& dev, const GemmShape& shape, const float* a, const float* b, float* c, float beta = 0.0f,
          Epilogue epilogue = Epilogue::none, const float* bias = nullptr);

}  // namespace pw::exec::cuda
