// The training kernels declared in train_kernels.h.
#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cuda/kernel_util.cuh"
#include "exec/cuda/train_kernels.h"

namespace pw::exec::cuda::kernels {

namespace {

__global__ void mark_nonfinite_k(const float* x, int64_t n, float* flag) {
  unsigned acc = 0;
  for (int64_t i = global_index(); i < n; i += global_stride())
    acc |= (__float_as_uint(x[i]) & 0x7f800000u) + 0x00800000u;
  if (acc & 0x80000000u) *flag = 1.0f;
}

}  // namespace

void mark_nonfinite(const float* x, int64_t n, float* flag, void* s) {
  mark_nonfinite_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, n, flag);
  check_launch("mark_nonfinite");
}

}  // namespace pw::exec::cuda::kernels
