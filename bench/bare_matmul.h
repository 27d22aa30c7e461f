// A bare oneDNN matmul C[M,N] = A[M,K]·B[K,N] (primitive created once, executed many times), for
// benchmarks that compare layer kernels against the library's raw rate in the same run.
// b_transposed: B is stored as [N, K] row-major (oneDNN "ba"), else [K, N] ("ab").
#pragma once

#include <cstdint>
#include <memory>

namespace pw::exec {

class BareMatmul {
 public:
  BareMatmul(int64_t m, int64_t k, int64_t n, bool b_transposed);
  ~BareMatmul();
  void run(const float* a, const float* b, float* c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::exec
