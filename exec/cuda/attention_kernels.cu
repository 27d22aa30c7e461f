// The causal masked softmax of attention and its backward (declared in kernels.h).
#include <cuda_runtime.h>

#include "exec/cuda/kernel_util.cuh"
#include "exec/cuda/kernels.h"

namespace pw::exec::cuda::kernels {

namespace {

// One block per row; query i = r % seq sees keys 0..i. Each thread owns the columns
// threadIdx.x, threadIdx.x + blockDim.x, ... (it alone reads and writes them), so the row is
// rewritten in place; sums go through block_sum's fixed tree.
__global__ void causal_softmax_k(float* p, int64_t seq, float scale) {
  const int64_t r = blockIdx.x;
  const int64_t n = r % seq + 1;
  float* row = p + r * seq;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, row[j]);
  mx = block_max(mx);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float e = expf((row[j] - mx) * scale);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / block_sum(sum);
  for (int64_t j = threadIdx.x; j < seq; j += blockDim.x) row[j] = j < n ? row[j] * inv : 0.0f;
}

__global__ void causal_softmax_backward_k(const float* p, float* d, int64_t seq, float scale) {
  const int64_t r = blockIdx.x;
  const int64_t n = r % seq + 1;
  const float* pr = p + r * seq;
  float* dr = d + r * seq;
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) dot += pr[j] * dr[j];
  dot = block_sum(dot);
  for (int64_t j = threadIdx.x; j < seq; j += blockDim.x) dr[j] = j < n ? pr[j] * (dr[j] - dot) * scale : 0.0f;
}

}  // namespace

void causal_softmax_forward(float* p, int64_t rows, int64_t seq, float scale, void* s) {
  if (rows <= 0) return;
  causal_softmax_k<<<static_cast<unsigned>(rows), row_threads(seq), 0, as_stream(s)>>>(p, seq, scale);
  check_launch("causal_softmax_forward");
}

void causal_softmax_backward(const float* p, float* d, int64_t rows, int64_t seq, float scale, void* s) {
  if (rows <= 0) return;
  causal_softmax_backward_k<<<static_cast<unsigned>(rows), row_threads(seq), 0, as_stream(s)>>>(p, d, seq, scale);
  check_launch("causal_softmax_backward");
}

}  // namespace pw::exec::cuda::kernels
