// Layer norm and column-sum kernels (declared in kernels.h).
#include <cuda_runtime.h>

#include "exec/cuda/column_chunks.h"
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

// Column reductions. The rows are cut into chunks of column_chunk_rows(rows) rows; a block
// covers 32 columns of one chunk with 8 row-groups: thread (c, k) sums the chunk's rows k, k + 8,
// ... in order, then the 8 partials are added in order. With one chunk the block adds its sum to
// the output; with several, each block writes its chunk's sum to scratch[chunk * cols + c] and
// add_partials_k adds the chunks in order. Deterministic: the order depends on rows and cols
// alone. Chunks give a large GPU blocks to run (GPT-2 small's 8192 rows x 768 columns: 768
// blocks, where one chunk gave 24), and a thread a short walk.
constexpr int kCols = 32, kGroups = 8;

// The rows [begin, end) of this block's chunk (blockIdx.y).
struct ChunkRows {
  int64_t begin, end;
};
__device__ inline ChunkRows block_chunk(int64_t rows, int64_t chunk_rows) {
  const int64_t begin = int64_t(blockIdx.y) * chunk_rows;
  return {begin, rows - begin < chunk_rows ? rows : begin + chunk_rows};
}

__global__ void column_sums_k(const float* x, int64_t rows, int64_t cols, int64_t chunk_rows, float* out,
                              float* partial) {
  __shared__ float part[kGroups][kCols];
  const int64_t c = int64_t(blockIdx.x) * kCols + threadIdx.x;
  const ChunkRows ch = block_chunk(rows, chunk_rows);
  float s = 0.0f;
  if (c < cols)
    for (int64_t r = ch.begin + threadIdx.y; r < ch.end; r += kGroups) s += x[r * cols + c];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float t = 0.0f;
    for (int k = 0; k < kGroups; ++k) t += part[k][threadIdx.x];
    if (partial) partial[int64_t(blockIdx.y) * cols + c] = t;
    else out[c] += t;
  }
}

__global__ void ln_weight_k(const float* x, const float* dy, const float* stats, int64_t rows, int64_t d,
                            int64_t chunk_rows, float* gg, float* gb, float* partial) {
  __shared__ float pg[kGroups][kCols], pb[kGroups][kCols];
  const int64_t c = int64_t(blockIdx.x) * kCols + threadIdx.x;
  const ChunkRows ch = block_chunk(rows, chunk_rows);
  float sg = 0.0f, sb = 0.0f;
  if (c < d)
    for (int64_t r = ch.begin + threadIdx.y; r < ch.end; r += kGroups) {
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
    if (partial) {  // [chunks, d] of grad_g's sums, then [chunks, d] of grad_b's
      partial[int64_t(blockIdx.y) * d + c] = tg;
      partial[(int64_t(gridDim.y) + blockIdx.y) * d + c] = tb;
    } else {
      gg[c] += tg;
      gb[c] += tb;
    }
  }
}

// out[c] += the chunks' sums partial[k * cols + c], k = 0, 1, ... in order.
__global__ void add_partials_k(const float* partial, int64_t chunks, int64_t cols, float* out) {
  for (int64_t c = global_index(); c < cols; c += global_stride()) {
    float t = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) t += partial[k * cols + c];
    out[c] += t;
  }
}

// The partial sums' buffer of a column reduction over `rows`: none with one chunk; with several
// the caller's scratch, which must be there (without it the chunks would race on the output).
float* chunk_partials(int64_t rows, float* scratch, const char* kernel) {
  if (column_chunks(rows) <= 1) return nullptr;
  if (!scratch) throw std::logic_error(std::string(kernel) + ": " + std::to_string(rows) + " rows need scratch");
  return scratch;
}

// The grid of a column reduction: column blocks x chunks.
dim3 column_grid(int64_t rows, int64_t cols) {
  return dim3(static_cast<unsigned>((cols + kCols - 1) / kCols), static_cast<unsigned>(column_chunks(rows)));
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
                                int64_t rows, int64_t d, float* scratch, void* s) {
  if (rows <= 0 || d <= 0) return;
  const int64_t chunks = column_chunks(rows);
  float* partial = chunk_partials(rows, scratch, "layer_norm_backward_weight");
  ln_weight_k<<<column_grid(rows, d), dim3(kCols, kGroups), 0, as_stream(s)>>>(
      x, dy, stats, rows, d, column_chunk_rows(rows), grad_g, grad_b, partial);
  check_launch("layer_norm_backward_weight");
  if (!partial) return;
  add_partials_k<<<grid_for(d), kThreads, 0, as_stream(s)>>>(partial, chunks, d, grad_g);
  check_launch("layer_norm_backward_weight (chunks of g)");
  add_partials_k<<<grid_for(d), kThreads, 0, as_stream(s)>>>(partial + chunks * d, chunks, d, grad_b);
  check_launch("layer_norm_backward_weight (chunks of b)");
}

void add_column_sums(const float* x, int64_t rows, int64_t cols, float* out, float* scratch, void* s) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t chunks = column_chunks(rows);
  float* partial = chunk_partials(rows, scratch, "add_column_sums");
  column_sums_k<<<column_grid(rows, cols), dim3(kCols, kGroups), 0, as_stream(s)>>>(
      x, rows, cols, column_chunk_rows(rows), out, partial);
  check_launch("add_column_sums");
  if (!partial) return;
  add_partials_k<<<grid_for(cols), kThreads, 0, as_stream(s)>>>(partial, chunks, cols, out);
  check_launch("add_column_sums (chunks)");
}

}  // namespace pw::exec::cuda::kernels
