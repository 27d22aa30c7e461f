// Elementwise, dropout, embedding, loss and optimizer kernels (declared in kernels.h).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "exec/cuda/kernel_util.cuh"
#include "exec/cuda/kernels.h"
#include "exec/optimizer_update.h"

namespace pw::exec::cuda::kernels {

namespace {

__global__ void fill_k(float* p, int64_t n, float v) {
  for (int64_t i = global_index(); i < n; i += global_stride()) p[i] = v;
}

__global__ void add_k(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = a[i] + b[i];
}

__global__ void add_row_bias_k(float* c, const float* bias, int64_t rows, int64_t cols, int64_t ldc, int64_t stride,
                               int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const int64_t j = i % cols, r = (i / cols) % rows, b = i / (cols * rows);
    c[b * stride + r * ldc + j] += bias[j];
  }
}

__global__ void mul_k(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = a[i] * b[i];
}

__global__ void scale_k(const float* x, const float* s, float* y, int64_t n) {
  const float f = s[0];
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = x[i] * f;
}

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
constexpr float kGeluC = 0.7978845608028654f;
constexpr float kGeluA = 0.044715f;

__global__ void gelu_forward_k(const float* x, float* y, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(kGeluC * (v + kGeluA * v * v * v)));
  }
}

__global__ void gelu_backward_k(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const float v = x[i];
    const float t = tanhf(kGeluC * (v + kGeluA * v * v * v));
    const float dt = (1.0f - t * t) * kGeluC * (1.0f + 3.0f * kGeluA * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
  }
}

__global__ void relu_forward_k(const float* x, float* y, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void relu_backward_k(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

// The generator of exec/layers/common.h (splitmix64), element-addressable: the k-th output
// (k >= 1) of Rng(seed) is mix(seed * A + B + k * A).
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
__device__ uint64_t splitmix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ uint64_t rng_start(uint64_t seed) { return seed * kGolden + 0x632BE59BD9B4E019ull; }
__device__ uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  return splitmix(rng_start(seed ^ (salt * 0xD1B54A32D192ED03ull)) + kGolden);
}

// grid.y: samples (grid-stride, grid.y is at most 65535); grid.x: grid-stride over the sample's
// elements.
__global__ void dropout_k(const float* x, float* mask, float* y, int64_t batch, int64_t per, uint64_t step_seed,
                          int64_t first, double p, float keep) {
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    const uint64_t s0 = rng_start(mix_seed(step_seed, static_cast<uint64_t>(first + b) + 1));
    const int64_t base = b * per;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < per; i += int64_t(gridDim.x) * blockDim.x) {
      const uint64_t r = splitmix(s0 + static_cast<uint64_t>(i + 1) * kGolden);
      const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
      const float m = u < p ? 0.0f : keep;
      mask[base + i] = m;
      y[base + i] = x[base + i] * m;
    }
  }
}

__global__ void embedding_forward_k(const float* ids, const float* tokens, const float* positions, float* y,
                                    int64_t rows, int64_t seq, int64_t d, int64_t vocab) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float v = ids[r];
    const int64_t id = static_cast<int64_t>(v);
    const bool ok = v >= 0.0f && static_cast<float>(id) == v && id < vocab;
    const float* t = tokens + (ok ? id : 0) * d;
    const float* pos = positions + (r % seq) * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) y[r * d + i] = ok ? t[i] + pos[i] : nanf("");
  }
}

// The table row a token id selects, or -1 for an id the gradient skips (negative, NaN, past the
// vocabulary); truncated like the CPU layer's.
__device__ inline int64_t token_row(float v, int64_t vocab) {
  const int64_t id = static_cast<int64_t>(v);
  return v >= 0.0f && id < vocab ? id : -1;
}

// Deterministic without atomics: one block per distinct id, at the id's first row (the block of
// any later row with that id leaves at once), adds the dy row of every row with that id into
// the id's gradient row, rows in order, each thread its columns. Every element thus sums the
// same rows in the same order as the CPU layer (row order), while distinct ids run in parallel
// and no two blocks write one row. blockDim.x == kEmbeddingTile. Scanning the ids (rows^2 / 2
// compares over a few tens of KiB in cache) replaces one thread per column walking all rows
// through the table, which left a large GPU to a handful of blocks.
constexpr int kEmbeddingTile = 256;
__global__ void embedding_tokens_grad_k(const float* ids, const float* dy, float* gt, int64_t rows, int64_t d,
                                        int64_t vocab) {
  __shared__ int64_t tile[kEmbeddingTile];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t id = token_row(ids[r], vocab);
    if (id < 0) continue;  // the same for every thread of the block
    bool earlier = false;  // an earlier row has this id: its block adds this row
    for (int64_t q0 = 0; q0 < r && !earlier; q0 += blockDim.x) {
      const int64_t q = q0 + threadIdx.x;
      earlier = __syncthreads_or(q < r && token_row(ids[q], vocab) == id) != 0;
    }
    if (earlier) continue;
    float* dst = gt + id * d;
    for (int64_t t0 = r; t0 < rows; t0 += kEmbeddingTile) {
      const int64_t n = rows - t0 < kEmbeddingTile ? rows - t0 : kEmbeddingTile;
      __syncthreads();  // the previous tile is no longer read
      if (threadIdx.x < n) tile[threadIdx.x] = token_row(ids[t0 + threadIdx.x], vocab);
      __syncthreads();
      for (int64_t j = 0; j < n; ++j) {
        if (tile[j] != id) continue;
        const float* src = dy + (t0 + j) * d;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dst[i] += src[i];
      }
    }
  }
}

// grad_positions[s, i] += sum over b (in order) of dy[b * seq + s, i].
__global__ void embedding_positions_grad_k(const float* dy, float* gp, int64_t rows, int64_t seq, int64_t d) {
  for (int64_t k = global_index(); k < seq * d; k += global_stride()) {
    const int64_t s = k / d, i = k % d;
    float acc = 0.0f;
    for (int64_t r = s; r < rows; r += seq) acc += dy[r * d + i];
    gp[k] += acc;
  }
}

// One block per row: max, then sum of exp in double, fixed reduction trees.
__global__ void xent_forward_k(const float* x, const float* targets, float* stats, double* row_loss, int64_t c) {
  const int64_t r = blockIdx.x;
  const float* xr = x + r * c;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x) mx = fmaxf(mx, xr[i]);
  mx = block_max(mx);
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x) sum += static_cast<double>(expf(xr[i] - mx));
  sum = block_sum(sum);
  if (threadIdx.x == 0) {
    const double lse = log(sum);
    const float tv = targets[r];
    const int64_t k = static_cast<int64_t>(tv);
    const bool ok = tv >= 0.0f && static_cast<float>(k) == tv && k < c;
    row_loss[r] = ok ? -(static_cast<double>(xr[k]) - mx - lse) : nan("");
    stats[2 * r] = mx;
    stats[2 * r + 1] = static_cast<float>(lse);
  }
}

// One block: loss[0] = sum(row_loss) / n, in a fixed order.
__global__ void mean_k(const double* v, int64_t n, float* out) {
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = static_cast<float>(s / static_cast<double>(n));
}

__global__ void xent_backward_k(const float* x, const float* targets, const float* stats, const float* grad, float* dx,
                                int64_t c, int64_t n) {
  const int64_t r = blockIdx.x;
  const float scale = grad[0] / static_cast<float>(n);
  const float mx = stats[2 * r], lse = stats[2 * r + 1];
  const int64_t k = static_cast<int64_t>(targets[r]);
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
    const float prob = expf(x[r * c + i] - mx - lse);
    dx[r * c + i] = (prob - (i == k ? 1.0f : 0.0f)) * scale;
  }
}

__global__ void mse_forward_k(const float* x, const float* t, float* loss, int64_t n) {
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double e = static_cast<double>(x[i]) - t[i];
    s += e * e;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(s / static_cast<double>(n));
}

__global__ void mse_backward_k(const float* x, const float* t, const float* grad, float* dx, int64_t n) {
  const float scale = 2.0f * grad[0] / static_cast<float>(n);
  for (int64_t i = global_index(); i < n; i += global_stride()) dx[i] = scale * (x[i] - t[i]);
}

__global__ void sgd_k(float* p, const float* g, float* v, int64_t n, float lr, float mu, float wd) {
  for (int64_t k = global_index(); k < n; k += global_stride()) sgd_update(p[k], g[k], v ? v + k : nullptr, lr, mu, wd);
}

__global__ void adam_k(float* p, const float* g, float* m, float* v, int64_t n, float lr, float b1, float b2, float c1,
                       float c2, float eps, float wd) {
  for (int64_t k = global_index(); k < n; k += global_stride())
    adam_update(p[k], g[k], m[k], v[k], lr, b1, b2, c1, c2, eps, wd);
}

}  // namespace

void fill(float* p, int64_t n, float v, void* s) {
  if (n <= 0) return;
  fill_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(p, n, v);
  check_launch("fill");
}

void add(const float* a, const float* b, float* y, int64_t n, void* s) {
  add_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(a, b, y, n);
  check_launch("add");
}

void add_into(float* y, const float* x, int64_t n, void* s) {
  add_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(y, x, y, n);
  check_launch("add_into");
}

void add_row_bias(float* c, const float* bias, int64_t batch, int64_t rows, int64_t cols, int64_t ldc, int64_t stride,
                  void* s) {
  const int64_t n = batch * rows * cols;
  if (n <= 0) return;
  add_row_bias_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(c, bias, rows, cols, ldc, stride, n);
  check_launch("add_row_bias");
}

void mul(const float* a, const float* b, float* y, int64_t n, void* s) {
  mul_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(a, b, y, n);
  check_launch("mul");
}

void scale(const float* x, const float* s_dev, float* y, int64_t n, void* s) {
  scale_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, s_dev, y, n);
  check_launch("scale");
}

void gelu_forward(const float* x, float* y, int64_t n, void* s) {
  gelu_forward_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, y, n);
  check_launch("gelu_forward");
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n, void* s) {
  gelu_backward_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, dy, dx, n);
  check_launch("gelu_backward");
}

void relu_forward(const float* x, float* y, int64_t n, void* s) {
  relu_forward_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, y, n);
  check_launch("relu_forward");
}

void relu_backward(const float* x, const float* dy, float* dx, int64_t n, void* s) {
  relu_backward_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, dy, dx, n);
  check_launch("relu_backward");
}

void dropout_forward(const float* x, float* mask, float* y, int64_t batch, int64_t per, uint64_t step_seed,
                     int64_t first_sample, double p, float keep, void* s) {
  if (batch <= 0 || per <= 0) return;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((per + kThreads - 1) / kThreads, 1024)),
                  static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  dropout_k<<<grid, kThreads, 0, as_stream(s)>>>(x, mask, y, batch, per, step_seed, first_sample, p, keep);
  check_launch("dropout_forward");
}

void embedding_forward(const float* ids, const float* tokens, const float* positions, float* y, int64_t rows,
                       int64_t seq, int64_t d, int64_t vocab, void* s) {
  if (rows <= 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  embedding_forward_k<<<blocks, 256, 0, as_stream(s)>>>(ids, tokens, positions, y, rows, seq, d, vocab);
  check_launch("embedding_forward");
}

void embedding_backward(const float* ids, const float* dy, float* grad_tokens, float* grad_positions, int64_t rows,
                        int64_t seq, int64_t d, int64_t vocab, void* s) {
  if (rows <= 0 || d <= 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  embedding_tokens_grad_k<<<blocks, kEmbeddingTile, 0, as_stream(s)>>>(ids, dy, grad_tokens, rows, d, vocab);
  check_launch("embedding_tokens_grad");
  embedding_positions_grad_k<<<grid_for(seq * d), kThreads, 0, as_stream(s)>>>(dy, grad_positions, rows, seq, d);
  check_launch("embedding_positions_grad");
}

void softmax_xent_forward(const float* x, const float* targets, float* stats, double* row_loss, float* loss, int64_t n,
                          int64_t c, void* s) {
  if (n <= 0) return;
  xent_forward_k<<<static_cast<unsigned>(n), kReduceThreads, 0, as_stream(s)>>>(x, targets, stats, row_loss, c);
  check_launch("softmax_xent_forward");
  mean_k<<<1, kReduceThreads, 0, as_stream(s)>>>(row_loss, n, loss);
  check_launch("softmax_xent_mean");
}

void softmax_xent_backward(const float* x, const float* targets, const float* stats, const float* grad, float* dx,
                           int64_t n, int64_t c, void* s) {
  if (n <= 0) return;
  xent_backward_k<<<static_cast<unsigned>(n), kReduceThreads, 0, as_stream(s)>>>(x, targets, stats, grad, dx, c, n);
  check_launch("softmax_xent_backward");
}

void mse_forward(const float* x, const float* t, float* loss, int64_t n, void* s) {
  mse_forward_k<<<1, kReduceThreads, 0, as_stream(s)>>>(x, t, loss, n);
  check_launch("mse_forward");
}

void mse_backward(const float* x, const float* t, const float* grad, float* dx, int64_t n, void* s) {
  mse_backward_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, t, grad, dx, n);
  check_launch("mse_backward");
}

void sgd_step(float* p, const float* g, float* momentum, int64_t n, float lr, float mu, float wd, void* s) {
  sgd_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(p, g, momentum, n, lr, mu, wd);
  check_launch("sgd_step");
}

void adam_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float b1, float b2, float c1,
               float c2, float eps, float wd, void* s) {
  adam_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(p, g, m, v, n, lr, b1, b2, c1, c2, eps, wd);
  check_launch("adam_step");
}

}  // namespace pw::exec::cuda::kernels
