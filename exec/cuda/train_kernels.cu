// The training kernels declared in train_kernels.h.
#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cuda/kernel_util.cuh"
#include "exec/cuda/train_kernels.h"
#include "exec/optimizer_update.h"

namespace pw::exec::cuda::kernels {

namespace {

__global__ void mark_nonfinite_k(const float* x, int64_t n, float* flag) {
  unsigned acc = 0;
  for (int64_t i = global_index(); i < n; i += global_stride())
    acc |= (__float_as_uint(x[i]) & 0x7f800000u) + 0x00800000u;
  if (acc & 0x80000000u) *flag = 1.0f;
}

__global__ void adam_multi_k(const int64_t* table, int64_t tensors, int64_t first_block, float lr, float b1, float b2,
                             float c1, float c2, float eps, float wd) {
  const int64_t* blk = table + tensors * 4 + (first_block + blockIdx.x) * 3;
  const int64_t* addr = table + blk[0] * 4;
  float* p = reinterpret_cast<float*>(addr[0]);
  const float* g = reinterpret_cast<const float*>(addr[1]);
  float* m = reinterpret_cast<float*>(addr[2]);
  float* v = reinterpret_cast<float*>(addr[3]);
  for (int64_t k = blk[1] + threadIdx.x; k < blk[2]; k += blockDim.x)
    adam_update(p[k], g[k], m[k], v[k], lr, b1, b2, c1, c2, eps, wd);
}

}  // namespace

void adam_step_multi(const int64_t* table, int64_t tensors, int64_t first_block, int64_t blocks, float lr, float b1,
                     float b2, float c1, float c2, float eps, float wd, void* s) {
  if (blocks <= 0) return;
  adam_multi_k<<<static_cast<unsigned>(blocks), kThreads, 0, as_stream(s)>>>(table, tensors, first_block, lr, b1, b2,
                                                                             c1, c2, eps, wd);
  check_launch("adam_step_multi");
}

void mark_nonfinite(const float* x, int64_t n, float* flag, void* s) {
  mark_nonfinite_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, n, flag);
  check_launch("mark_nonfinite");
}

}  // namespace pw::exec::cuda::kernels
