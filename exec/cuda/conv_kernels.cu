// Convolution (explicit GEMM) helpers and the row copy of concat (declared in cnn_kernels.h).
#include <cuda_runtime.h>

#include "exec/cuda/cnn_kernels.h"
#include "exec/cuda/kernel_util.cuh"

namespace pw::exec::cuda::kernels {

namespace {

__global__ void im2col_k(const float* x, float* col, Window2d w, int64_t samples, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) col[i] = im2col_element(x, w, samples, i);
}

__global__ void col2im_k(const float* dcol, float* dx, Window2d w, int64_t samples, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) dx[i] = col2im_element(dcol, w, samples, i);
}

// One thread per NCHW element in both directions (a permutation: every element written once).
__global__ void cf_to_nchw_k(const float* cf, const float* bias, float* y, int64_t channels, int64_t samples,
                             int64_t pixels) {
  const int64_t n = channels * samples * pixels;
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const float v = cf[channels_first_index(i, channels, samples, pixels)];
    y[i] = bias ? v + bias[(i / pixels) % channels] : v;
  }
}

__global__ void nchw_to_cf_k(const float* y, float* cf, int64_t channels, int64_t samples, int64_t pixels) {
  const int64_t n = channels * samples * pixels;
  for (int64_t i = global_index(); i < n; i += global_stride())
    cf[channels_first_index(i, channels, samples, pixels)] = y[i];
}

__global__ void row_sums_k(const float* x, int64_t cols, float* out) {
  const float* xr = x + int64_t(blockIdx.x) * cols;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
  const float total = block_sum(s);
  if (threadIdx.x == 0) out[blockIdx.x] += total;
}

__global__ void copy_rows_k(const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  for (int64_t i = global_index(); i < rows * cols; i += global_stride()) {
    const int64_t r = i / cols, j = i % cols;
    dst[r * dst_ld + j] = src[r * src_ld + j];
  }
}

}  // namespace

void im2col(const float* x, float* col, const Window2d& w, int64_t samples, void* s) {
  const int64_t n = w.channels * w.kernel * w.kernel * samples * w.out_h() * w.out_w();
  im2col_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, col, w, samples, n);
  check_launch("im2col");
}

void col2im(const float* dcol, float* dx, const Window2d& w, int64_t samples, void* s) {
  const int64_t n = samples * w.channels * w.in_h * w.in_w;
  col2im_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(dcol, dx, w, samples, n);
  check_launch("col2im");
}

void channels_first_to_nchw(const float* cf, const float* bias, float* y, int64_t channels, int64_t samples,
                            int64_t pixels, void* s) {
  cf_to_nchw_k<<<grid_for(channels * samples * pixels), kThreads, 0, as_stream(s)>>>(cf, bias, y, channels, samples,
                                                                                     pixels);
  check_launch("channels_first_to_nchw");
}

void nchw_to_channels_first(const float* y, float* cf, int64_t channels, int64_t samples, int64_t pixels, void* s) {
  nchw_to_cf_k<<<grid_for(channels * samples * pixels), kThreads, 0, as_stream(s)>>>(y, cf, channels, samples, pixels);
  check_launch("nchw_to_channels_first");
}

void add_row_sums(const float* x, int64_t rows, int64_t cols, float* out, void* s) {
  if (rows <= 0) return;
  row_sums_k<<<static_cast<unsigned>(rows), kReduceThreads, 0, as_stream(s)>>>(x, cols, out);
  check_launch("add_row_sums");
}

void copy_rows(const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows, int64_t cols, void* s) {
  if (rows * cols <= 0) return;
  copy_rows_k<<<grid_for(rows * cols), kThreads, 0, as_stream(s)>>>(src, src_ld, dst, dst_ld, rows, cols);
  check_launch("copy_rows");
}

}  // namespace pw::exec::cuda::kernels
