// cuBLASLt GEMM wrapper against a double-precision host product (needs a GPU).
#include <doctest/doctest.h>

#include <cmath>

#include "exec/cuda/gemm.h"
#include "tests/exec/cuda/gpu_compare.h"

namespace pw::exec::cuda {
namespace {

using testing::uniform;

double gelu(double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

// C = op(A)·op(B) (+ beta C0) (+ bias) (gelu), packed operands, one batch member.
Tensor reference(const GemmShape& s, const Tensor& a, const Tensor& b, const Tensor& c0, float beta, Epilogue ep,
                 const Tensor& bias, int64_t member) {
  Tensor c({s.m, s.n});
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double av =
            s.trans_a ? a.data()[member * s.m * s.k + p * s.m + i] : a.data()[member * s.m * s.k + i * s.k + p];
        const double bv =
            s.trans_b ? b.data()[member * s.k * s.n + j * s.k + p] : b.data()[member * s.k * s.n + p * s.n + j];
        acc += av * bv;
      }
      acc += beta * c0.data()[member * s.m * s.n + i * s.n + j];
      if (ep == Epilogue::bias || ep == Epilogue::bias_gelu) acc += bias.data()[j];
      if (ep == Epilogue::gelu || ep == Epilogue::bias_gelu) acc = gelu(acc);
      c.data()[i * s.n + j] = static_cast<float>(acc);
    }
  return c;
}

void check_gemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, int64_t batch, float beta, Epilogue ep,
                bool tf32 = false, double tol = 1e-5) {
  INFO("m " << m << " n " << n << " k " << k << " trans " << ta << tb << " batch " << batch << " beta " << beta
            << " epilogue " << static_cast<int>(ep) << " tf32 " << tf32);
  CudaDevice& dev = CudaDevice::get(0);
  dev.set_tf32(tf32);
  GemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.trans_a = ta;
  s.trans_b = tb;
  s.batch = batch;
  s.stride_a = m * k;
  s.stride_b = k * n;
  s.stride_c = m * n;
  Tensor a = uniform({batch, m * k}, 1), b = uniform({batch, k * n}, 2), c0 = uniform({batch, m * n}, 3);
  Tensor bias = uniform({n}, 4);
  Tensor da = to_device(a, dev), db = to_device(b, dev), dc = to_device(c0, dev), dbias = to_device(bias, dev);
  gemm(dev, s, da.data(), db.data(), dc.data(), beta, ep, dbias.data());
  const Tensor got = to_host(dc);
  dev.set_tf32(false);
  for (int64_t member = 0; member < batch; ++member) {
    Tensor want = reference(s, a, b, c0, beta, ep, bias, member);
    Tensor part({m, n});
    std::memcpy(part.data(), got.data() + member * m * n, static_cast<size_t>(part.bytes()));
    const double e = testing::rel_error(part, want);
    INFO("member " << member << " relative error " << e);
    CHECK(e <= tol);
  }
}

TEST_CASE("gemm: every transpose combination, odd sizes, fp32 within 1e-5") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) check_gemm(37, 53, 71, ta, tb, 1, 0.0f, Epilogue::none);
}

// cuBLASLt's GELU epilogue may evaluate tanh with the hardware approximation (relative error up
// to about 2^-11), so it is held to 1e-3, not fp32's 1e-5; a wrong formula (no GELU, GELU before
// the bias) is off by far more.
constexpr double kGeluEpilogueTol = 1e-3;

TEST_CASE("gemm: accumulate (beta 1), batched, bias and GELU epilogues") {
  check_gemm(64, 96, 128, false, true, 1, 1.0f, Epilogue::none);
  check_gemm(16, 24, 8, true, false, 5, 0.0f, Epilogue::none);
  check_gemm(33, 40, 20, false, true, 1, 0.0f, Epilogue::bias);
  check_gemm(33, 40, 20, false, true, 1, 1.0f, Epilogue::bias);
  check_gemm(32, 48, 64, false, true, 1, 0.0f, Epilogue::bias_gelu, false, kGeluEpilogueTol);
  check_gemm(32, 48, 64, false, false, 1, 0.0f, Epilogue::gelu, false, kGeluEpilogueTol);
}

// One row, one column, k of 1 (shapes cuBLASLt may have no bias-epilogue kernel for: gemm then
// adds the bias with a kernel) and a batched bias product: the same results either way.
TEST_CASE("gemm: the bias on degenerate and batched shapes") {
  check_gemm(1, 40, 20, false, true, 1, 0.0f, Epilogue::bias);
  check_gemm(33, 1, 20, false, true, 1, 0.0f, Epilogue::bias);
  check_gemm(8, 5, 1, false, true, 1, 1.0f, Epilogue::bias);
  check_gemm(6, 7, 9, false, true, 3, 1.0f, Epilogue::bias);
}

TEST_CASE("gemm: TF32 is opt-in and stays within TF32's precision") {
  check_gemm(128, 128, 256, false, true, 1, 0.0f, Epilogue::none, true, 2e-3);
}

}  // namespace
}  // namespace pw::exec::cuda
