// Layer norm and column-sum kernels (declared in kernels.h).
#include <cuda_runtime.h>

#include "exec/cuda/kernel_util.cuh"
#include "exec/cuda/kernels.h"

namespace pw::exec::cuda::kernels {

namespace {

constexpr float kEps = 1e-5f;  // as exec/layers/layer_norm.cc

// One block per row; two passes (mean, then the centred variance), as the CPU kernel.
__global__ void ln_forward_k(const float* x, const float* g, const float* b, float* y, float* stats, int64_t d) {
  const int64_t r = blockIdx.x;
  const float* xr = x + r * d;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += xr[i];
  const float m = block_sum(s) / static_cast<float>(d);
  float q = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) q += (xr[i] - m) * (xr[i] - m);
  const float rstd = rsqrtf(block_sum(q) / static_cast<float>(d) + kEps);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) y[r * d + i] = (xr[i] - m) * rstd * g[i] + b[i];
  if (threadIdx.x == 0) {
    stats[2 * r] = m;
    stats[2 * r + 1] = rstd;
  }
}

__global__ void ln_backward_k(const float* x, const float* dy, const float* g, const float* stats, float* dx,
                              int64_t d) {
  const int64_t r = blockIdx.x;
  const float m = stats[2 * r], rstd = stats[2 * r + 1];
  const float* xr = x + r * d;
  const float* dyr = dy + r * d;
  float s1 = 0.0f, s2 = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const float dxh = dyr[i] * g[i];
    s1 += dxh;
    s2 += dxh * (xr[i] - m) * rstd;
  }
  const float a = block_sum(s1) / static_cast<float>(d);
  const float c = block_sum(s2) / static_cast<float>(d);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    dx[r * d + i] = rstd * (dyr[i] * g[i] - a - (xr[i] - m) * rstd * c);
}

// Column reductions: a block covers 32 columns with 8 row-groups; thread (c, k) sums rows
// k, k + 8, ... in order, then the 8 partials are added in order. Deterministic.
constexpr int kCols = 32, kGroups = 8;

__global__ void column_sums_k(const float* x, int64_t rows, int64_t cols, float* out) {
  __shared__ float part[kGroups][kCols];
  const int64_t c = int64_t(blockIdx.x) * kCols + threadIdx.x;
  float s = 0.0f;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kGroups) s += x[r * cols + c];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float t = 0.0f;
    for (int k = 0; k < kGroups; ++k) t += part[k][threadIdx.x];
    out[c] += t;
  }
}

__global__ void ln_weight_k(const float* x, const float* dy, const float* stats, float* gg, float* gb, int64_t rows,
                            int64_t d) {
  __shared__ float pg[kGroups][kCols], pb[kGroups][kCols];
  const int64_t c = int64_t(blockIdx.x) * kCols + threadIdx.x;
  float sg = 0.0f, sb = 0.0f;
  if (c < d)
    for (int64_t r = threadIdx.y; r < rows; r += kGroups) {
      const float v = dy[r * d + c];
      sg += v * (x[r * d + c] - stats[2 * r]) * stats[2 * r + 1];
      sb += v;
    }
  pg[threadIdx.y][threadIdx.x] = sg;
  pb[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && c < d) {
    float tg = 0.0f, tb = 0.0f;
    for (int k = 0; k < kGroups; ++k) {
      tg += pg[k][threadIdx.x];
      tb += pb[k][threadIdx.x];
    }
    gg[c] += tg;
    gb[c] += tb;
  }
}

}  // namespace

void layer_norm_forward(const float* x, const float* g, const float* b, float* y, float* stats, int64_t rows, int64_t d,
                        void* s) {
  if (rows <= 0) return;
  ln_forward_k<<<static_cast<unsigned>(rows), row_threads(d), 0, as_stream(s)>>>(x, g, b, y, stats, d);
  check_launch("layer_norm_forward");
}

void layer_norm_backward_input(const float* x, const float* dy, const float* g, const float* stats, float* dx,
                               int64_t rows, int64_t d, void* s) {
  if (rows <= 0) return;
  ln_backward_k<<<static_cast<unsigned>(rows), row_threads(d), 0, as_stream(s)>>>(x, dy, g, stats, dx, d);
  check_launch("layer_norm_backward_input");
}

void layer_norm_backward_weight(const float* x, const float* dy, const float* stats, float* grad_g, float* grad_b,
                                int64_t rows, int64_t d, void* s) {
  const dim3 block(kCols, kGroups);
  ln_weight_k<<<static_cast<unsigned>((d + kCols - 1) / kCols), block, 0, as_stream(s)>>>(x, dy, stats, grad_g, grad_b,
                                                                                          rows, d);
  check_launch("layer_norm_backward_weight");
}

void add_column_sums(const float* x, int64_t rows, int64_t cols, float* out, void* s) {
  const dim3 block(kCols, kGroups);
  column_sums_k<<<static_cast<unsigned>((cols + kCols - 1) / kCols), block, 0, as_stream(s)>>>(x, rows, cols, out);
  check_launch("add_column_sums");
}

}  // namespace pw::exec::cuda::kernels
