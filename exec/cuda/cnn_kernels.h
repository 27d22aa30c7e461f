// The CUDA CNN layers' kernels (conv_kernels.cu, pool_kernels.cu, batch_norm_kernels.cu), as
// plain functions over device pointers, with the conventions of kernels.h: queued on `stream`
// (a cudaStream_t as void*), never waiting; a launch error throws std::runtime_error naming the
// kernel. No floating-point atomics: every output element is written by one thread, and every
// sum is formed in a fixed order, so a call repeated on the same inputs writes the same bits.
// Every output element is written (padding included), so outputs need no zeroing.
// Index conventions: cnn_index.h. Activations are NCHW.
#pragma once

#include <cstdint>

#include "exec/cuda/batch_norm_index.h"
#include "exec/cuda/cnn_index.h"

namespace pw::exec::cuda::kernels {

// ---- convolution (the explicit GEMM of conv_plan.h), over a chunk of `samples` samples
// col[col_row(c, kh, kw), col_column(s, oh, ow)] = x[s, c, oh * stride - pad + kh, ...] or 0.
void im2col(const float* x, float* col, const Window2d& w, int64_t samples, void* stream);
// dx[s, c, h, w] = the sum, over the (kh, kw, oh, ow) that read it (kh, kw ascending), of
// dcol at that position: the transpose of im2col, written as a gather.
void col2im(const float* dcol, float* dx, const Window2d& w, int64_t samples, void* stream);
// y[s, o, p] = cf[o, s * pixels + p] (+ bias[o]; bias may be null).
void channels_first_to_nchw(const float* cf, const float* bias, float* y, int64_t channels, int64_t samples,
                            int64_t pixels, void* stream);
// cf[o, s * pixels + p] = y[s, o, p].
void nchw_to_channels_first(const float* y, float* cf, int64_t channels, int64_t samples, int64_t pixels, void* stream);
// out[r] += the sum of x[r, 0, cols) (one block per row, a fixed reduction tree).
void add_row_sums(const float* x, int64_t rows, int64_t cols, float* out, void* stream);

// ---- pooling over `batch` samples of w.channels maps
// Max: y = the window's maximum over the positions inside the map (padding never wins; the
// first maximum in window order on ties); arg = that position's index h * in_w + w as a float.
void max_pool_forward(const float* x, float* y, float* arg, const Window2d& w, int64_t batch, void* stream);
// dx[h, w] = the sum of dy over the windows (ascending) whose arg is (h, w).
void max_pool_backward(const float* dy, const float* arg, float* dx, const Window2d& w, int64_t batch, void* stream);
// Average including padding: y = (sum of the window's positions inside the map) / kernel^2.
void avg_pool_forward(const float* x, float* y, const Window2d& w, int64_t batch, void* stream);
// dx[h, w] = the sum over the windows containing (h, w) (ascending) of dy / kernel^2.
void avg_pool_backward(const float* dy, float* dx, const Window2d& w, int64_t batch, void* stream);

// ---- batch normalization over x [batch, c, spatial], statistics per group of `group`
// consecutive samples (conv_plan.h: stat_groups; the last group may be smaller), eps 1e-5;
// the per-element formulas are batch_norm_index.h's.
// mean[k, c], var[k, c]: the biased mean and variance of group k, channel c (double sums).
void batch_norm_stats(const float* x, float* mean, float* var, const BatchNormShape& s, void* stream);
// y = gamma / sqrt(var + eps) * (x - mean) + beta with the sample's group's statistics.
void batch_norm_forward(const float* x, const float* gamma, const float* beta, const float* mean, const float* var,
                        float* y, const BatchNormShape& s, void* stream);
// part[k, 0, c] = sum dy * (x - mean) / sqrt(var + eps) (dgamma of group k), part[k, 1, c] =
// sum dy (dbeta of group k).
void batch_norm_backward_reduce(const float* x, const float* dy, const float* mean, const float* var, float* part,
                                const BatchNormShape& s, void* stream);
// dx = gamma * rstd * (dy - (dbeta_k + xhat * dgamma_k) / m_k), m_k = the group's elements per channel.
void batch_norm_backward_input(const float* x, const float* dy, const float* gamma, const float* mean, const float* var,
                               const float* part, float* dx, const BatchNormShape& s, void* stream);
// Per channel, groups in order: dgb[0, c] = sum_k part[k, 0, c], dgb[1, c] = sum_k part[k, 1, c];
// and the running statistics, as exec/layers/batch_norm.cc:
// rm = (1 - momentum) rm + momentum mean_k; rv = (1 - momentum) rv + momentum unbias_k var_k.
void batch_norm_finish(const float* part, const float* mean, const float* var, float* dgb, float* running_mean,
                       float* running_var, float momentum, const BatchNormShape& s, void* stream);

// ---- concat
// dst[r * dst_ld + j] = src[r * src_ld + j] for r < rows, j < cols.
void copy_rows(const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows, int64_t cols, void* stream);

}  // namespace pw::exec::cuda::kernels
