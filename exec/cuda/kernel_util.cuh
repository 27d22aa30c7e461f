// Launch helpers and deterministic block reductions shared by the .cu files (device code only).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace pw::exec::cuda::kernels {

constexpr int kThreads = 256;        // elementwise kernels
constexpr int kReduceThreads = 256;  // one block per row; a power of two

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// Blocks for a grid-stride loop over n elements (at least 1, at most 8192).
inline unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 8192));
}

inline void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA kernel ") + kernel + ": " + cudaGetErrorString(e));
}

// Threads of a one-block-per-row kernel over rows of d elements: the smallest power of two
// >= d, at least 32 and at most 1024 (block_reduce needs a power of two).
inline unsigned row_threads(int64_t d) {
  unsigned t = 32;
  while (t < 1024 && static_cast<int64_t>(t) < d) t <<= 1;
  return t;
}

__device__ inline int64_t global_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t global_stride() { return int64_t(gridDim.x) * blockDim.x; }

// Sum (or max) over the block's threads, the same tree every time; every thread gets the result.
// blockDim.x must be a power of two <= 1024. Contains __syncthreads: call from all threads.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op) {
  __shared__ T buf[1024];
  buf[threadIdx.x] = v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) buf[threadIdx.x] = op(buf[threadIdx.x], buf[threadIdx.x + w]);
    __syncthreads();
  }
  const T r = buf[0];
  __syncthreads();
  return r;
}

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename T>
__device__ T block_sum(T v) {
  return block_reduce(v, SumOp{});
}
__device__ inline float block_max(float v) { return block_reduce(v, MaxOp{}); }

}  // namespace pw::exec::cuda::kernels
