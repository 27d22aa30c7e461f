#include "exec/cuda/gemm.h"

#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "exec/cuda/cublaslt_library.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/lt_preference.h"
#include "models/error.h"

namespace pw::exec::cuda {

namespace {

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt: ") + what + " failed (status " +
                             std::to_string(static_cast<int>(s)) + ")");
}

// Largest power of two <= 16 that divides the address of every batch member (the address and,
// for batched products, the stride in bytes).
int64_t alignment(const void* p, int64_t batch, int64_t stride) {
  auto a = reinterpret_cast<uintptr_t>(p);
  if (batch > 1) a |= static_cast<uintptr_t>(stride) * sizeof(float);
  int64_t al = 16;
  while (al > 4 && a % static_cast<uintptr_t>(al) != 0) al /= 2;
  return al;
}

using Key = std::array<int64_t, 20>;

// A prepared product: descriptors and the chosen algorithm, reused for every call of the shape.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  // A bias product for which the heuristic had no bias-epilogue algorithm (degenerate shapes,
  // e.g. one row or one column): the plain product, then the bias added by a kernel.
  bool bias_by_kernel = false;
  ~Plan() {
    if (a) cublaslt().MatrixLayoutDestroy(a);
    if (b) cublaslt().MatrixLayoutDestroy(b);
    if (c) cublaslt().MatrixLayoutDestroy(c);
    if (desc) cublaslt().MatmulDescDestroy(desc);
  }
};

cublasLtMatrixLayout_t layout(const LtMatrix& m, int64_t batch) {
  cublasLtMatrixLayout_t l;
  check(
      cublaslt().MatrixLayoutCreate(&l, CUDA_R_32F, static_cast<uint64_t>(m.rows), static_cast<uint64_t>(m.cols), m.ld),
      "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const int32_t bc = static_cast<int32_t>(batch);
    check(cublaslt().MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc),
          "layout batch count");
    check(cublaslt().MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &m.batch_stride,
                                              sizeof m.batch_stride),
          "layout batch stride");
  }
  return l;
}

cublasLtEpilogue_t lt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::gelu: return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::bias_gelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// The cuBLASLt descriptors of lt_plan(s) and the heuristic's first algorithm; nullptr when the
// heuristic has none.
std::unique_ptr<Plan> make_plan(CudaDevice& dev, const GemmShape& s, Epilogue ep, const std::array<int64_t, 4>& align) {
  auto p = std::make_unique<Plan>();
  const LtPlan lt = lt_plan(s);
  const cublasComputeType_t compute = dev.tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check(cublaslt().MatmulDescCreate(&p->desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = lt.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = lt.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublaslt().MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
  check(cublaslt().MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
  const cublasLtEpilogue_t e = lt_epilogue(ep);
  check(cublaslt().MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), "epilogue");
  if (ep == Epilogue::bias || ep == Epilogue::bias_gelu) {
    const cudaDataType_t bt = CUDA_R_32F;
    check(cublaslt().MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt), "bias type");
  }
  p->a = layout(lt.a, lt.batch);
  p->b = layout(lt.b, lt.batch);
  p->c = layout(lt.c, lt.batch);

  const LtPreference pref = lt_preference(dev.workspace_bytes());
  const uint32_t al_a = static_cast<uint32_t>(align[1]), al_b = static_cast<uint32_t>(align[0]);
  const uint32_t al_c = static_cast<uint32_t>(align[2]);
  set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al_a, "alignment preference");
  set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al_b, "alignment preference");
  set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_c, "alignment preference");
  set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_c, "alignment preference");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublaslt().MatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(dev.blas_handle()), p->desc,
                                                              p->a, p->b, p->c, p->c, pref.get(), 1, &result, &found);
  // "Not supported" or nothing found: no algorithm for this epilogue (the caller may drop it);
  // any other status is an error of the call itself (a bad layout), reported as such.
  if (st != CUBLAS_STATUS_NOT_SUPPORTED) check(st, "cublasLtMatmulAlgoGetHeuristic");
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) return nullptr;
  p->algo = result.algo;
  return p;
}

// The plan of a product: with its epilogue, else (bias only) without it and the bias by kernel.
std::unique_ptr<Plan> plan_product(CudaDevice& dev, const GemmShape& s, Epilogue ep,
                                   const std::array<int64_t, 4>& align) {
  std::unique_ptr<Plan> p = make_plan(dev, s, ep, align);
  if (!p && ep == Epilogue::bias) {
    p = make_plan(dev, s, Epilogue::none, align);
    if (p) p->bias_by_kernel = true;
  }
  if (!p)
    throw std::runtime_error("cuBLASLt: no algorithm for the product [" + std::to_string(s.m) + "x" +
                             std::to_string(s.k) + "]·[" + std::to_string(s.k) + "x" + std::to_string(s.n) +
                             "] (batch " + std::to_string(s.batch) + ", trans " + std::to_string(s.trans_a) +
                             std::to_string(s.trans_b) + ")");
  return p;
}

}  // namespace

LtPlan lt_plan(const GemmShape& s) {
  const int64_t lda = s.lda ? s.lda : (s.trans_a ? s.m : s.k);
  const int64_t ldb = s.ldb ? s.ldb : (s.trans_b ? s.k : s.n);
  const int64_t ldc = s.ldc ? s.ldc : s.n;
  LtPlan p;
  p.batch = s.batch;
  p.trans_a = s.trans_b;
  p.trans_b = s.trans_a;
  // Row-major [r, c] with leading dimension ld is column-major [c, r] with the same ld. Our B is
  // stored [k, n] ([n, k] with trans_b), our A [m, k] ([k, m] with trans_a), our C [m, n].
  p.a = s.trans_b ? LtMatrix{s.k, s.n, ldb, s.stride_b} : LtMatrix{s.n, s.k, ldb, s.stride_b};
  p.b = s.trans_a ? LtMatrix{s.m, s.k, lda, s.stride_a} : LtMatrix{s.k, s.m, lda, s.stride_a};
  p.c = LtMatrix{s.n, s.m, ldc, s.stride_c};
  return p;
}

std::string gemm_shape_problem(const GemmShape& s) {
  if (s.m < 1 || s.n < 1 || s.k < 1) return "gemm sizes must be >= 1";
  if (s.batch < 1 || s.groups < 1) return "gemm batch and group counts must be >= 1";
  if (s.lda != 0 && s.lda < (s.trans_a ? s.m : s.k)) return "gemm lda below the row length of A";
  if (s.ldb != 0 && s.ldb < (s.trans_b ? s.k : s.n)) return "gemm ldb below the row length of B";
  if (s.ldc != 0 && s.ldc < s.n) return "gemm ldc below the row length of C";
  if (s.stride_a < 0 || s.stride_b < 0 || s.stride_c < 0 || s.group_stride_a < 0 || s.group_stride_b < 0 ||
      s.group_stride_c < 0)
    return "gemm strides must be >= 0";
  return "";
}

void gemm(CudaDevice& dev, const GemmShape& s, const float* a, const float* b, float* c, float beta, Epilogue epilogue,
          const float* bias) {
  if (s.groups > 1) {
    GemmShape one = s;
    one.groups = 1;
    for (int64_t g = 0; g < s.groups; ++g)
      gemm(dev, one, a + g * s.group_stride_a, b + g * s.group_stride_b, c + g * s.group_stride_c, beta, epilogue,
           bias);
    return;
  }
  const std::string problem = gemm_shape_problem(s);
  PW_CHECK(problem.empty(), problem);
  const bool has_bias = epilogue == Epilogue::bias || epilogue == Epilogue::bias_gelu;
  PW_CHECK(!has_bias || bias != nullptr, "gemm bias epilogue without a bias");
  PW_CHECK(beta == 0.0f || epilogue == Epilogue::none || epilogue == Epilogue::bias,
           "gemm: a GELU epilogue cannot accumulate");
  const int64_t lda = s.lda ? s.lda : (s.trans_a ? s.m : s.k);
  const int64_t ldb = s.ldb ? s.ldb : (s.trans_b ? s.k : s.n);
  const int64_t ldc = s.ldc ? s.ldc : s.n;
  const std::array<int64_t, 4> align{alignment(a, s.batch, s.stride_a), alignment(b, s.batch, s.stride_b),
                                     alignment(c, s.batch, s.stride_c), 0};
  const Key key{s.m,
                s.n,
                s.k,
                s.trans_a,
                s.trans_b,
                lda,
                ldb,
                ldc,
                s.batch,
                s.stride_a,
                s.stride_b,
                s.stride_c,
                static_cast<int64_t>(epilogue),
                dev.tf32(),
                beta != 0.0f,
                align[0],
                align[1],
                align[2],
                dev.device().index,
                dev.device().stream};
  // Plans per stream slot of a device (keyed by both), created on first use: a plan's
  // descriptor takes each call's bias pointer, so two slots driven from two threads (pipeline
  // stages on one GPU) must not share one. The heuristic gives every slot the same algorithm
  // (same device, same workspace size), so the results do not depend on the slot. The map is
  // guarded for the threads of several slots.
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Plan>> plans;
  Plan* plan;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, plan_product(dev, s, epilogue, align)).first;
    plan = it->second.get();
  }
  if (has_bias && !plan->bias_by_kernel)
    check(cublaslt().MatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
          "bias pointer");
  const float alpha = 1.0f;
  check(cublaslt().Matmul(static_cast<cublasLtHandle_t>(dev.blas_handle()), plan->desc, &alpha, b, plan->a, a, plan->b,
                          &beta, c, plan->c, c, plan->c, &plan->algo, dev.workspace(), dev.workspace_bytes(),
                          static_cast<cudaStream_t>(dev.stream())),
        "cublasLtMatmul");
  if (plan->bias_by_kernel) kernels::add_row_bias(c, bias, s.batch, s.m, s.n, ldc, s.stride_c, dev.stream());
}

}  // namespace pw::exec::cuda
