// The CUDA backend's kernels (kernels.cu, norm_kernels.cu, attention_kernels.cu), as plain functions over device
// pointers. Every function queues its work on `stream` (a cudaStream_t passed as void*, so this
// header needs no CUDA header) and returns without waiting; a launch error throws
// std::runtime_error naming the kernel.
//
// Determinism: no kernel uses floating-point atomics; every sum is formed in a fixed order, so
// a kernel run twice on the same inputs writes the same bits (re-materialization relies on it).
// Formulas follow the CPU layers in exec/layers/ (same epsilon, same GELU tanh approximation,
// same dropout draws).
#pragma once

#include <cstdint>

namespace pw::exec::cuda::kernels {

// p[0, n) = v.
void fill(float* p, int64_t n, float v, void* stream);
// y = a + b; y += x.
void add(const float* a, const float* b, float* y, int64_t n, void* stream);
void add_into(float* y, const float* x, int64_t n, void* stream);
// y = x * s (s read from device memory s_dev[0]).
void scale(const float* x, const float* s_dev, float* y, int64_t n, void* stream);

// GELU (tanh approximation, as GPT-2 and oneDNN's eltwise_gelu_tanh) and ReLU.
void gelu_forward(const float* x, float* y, int64_t n, void* stream);
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n, void* stream);
void relu_forward(const float* x, float* y, int64_t n, void* stream);
void relu_backward(const float* x, const float* dy, float* dx, int64_t n, void* stream);

// c[b * stride + r * ldc + j] += bias[j] for b < batch, r < rows, j < cols: a bias on every row
// of `batch` matrices (gemm's bias where cuBLASLt has no bias epilogue for the shape).
void add_row_bias(float* c, const float* bias, int64_t batch, int64_t rows, int64_t cols, int64_t ldc, int64_t stride,
                  void* stream);

// Column reductions (add_column_sums, layer_norm_backward_weight) sum their rows in chunks
// (exec/cuda/column_chunks.h): deterministic, and with more than one chunk they need scratch on
// the device, column_sum_scratch(rows, cols) floats per output.
// out[c] += the sum over rows r of x[r, c]: a bias gradient. scratch: column_sum_scratch(rows,
// cols) floats (may be null when that is 0), used on `stream`.
void add_column_sums(const float* x, int64_t rows, int64_t cols, float* out, float* scratch, void* stream);

// Inverted dropout: mask[b, i] = 0 with probability p, else keep; y = x * mask. The draw of
// element i of sample b is the (i+1)-th output of exec/layers/common.h's Rng seeded with
// mix_seed(step_seed, first_sample + b + 1), exactly as exec/layers/dropout.cc draws it.
void dropout_forward(const float* x, float* mask, float* y, int64_t batch, int64_t per, uint64_t step_seed,
                     int64_t first_sample, double p, float keep, void* stream);
// dx = dy * mask.
void mul(const float* a, const float* b, float* y, int64_t n, void* stream);

// Embedding: y[r, :] = tokens[ids[r], :] + positions[r % seq, :] for r < rows. An id that is
// not an integer in [0, vocab) writes NaN into its row (the trainer's NaN check reports it).
void embedding_forward(const float* ids, const float* tokens, const float* positions, float* y, int64_t rows,
                       int64_t seq, int64_t d, int64_t vocab, void* stream);
// grad_tokens[ids[r], :] += dy[r, :] and grad_positions[r % seq, :] += dy[r, :], rows in order.
void embedding_backward(const float* ids, const float* dy, float* grad_tokens, float* grad_positions, int64_t rows,
                        int64_t seq, int64_t d, int64_t vocab, void* stream);

// Layer norm over the last dimension d (epsilon 1e-5): y = (x - mean) * rstd * g + b;
// stats[r] = {mean, rstd}.
void layer_norm_forward(const float* x, const float* g, const float* b, float* y, float* stats, int64_t rows, int64_t d,
                        void* stream);
void layer_norm_backward_input(const float* x, const float* dy, const float* g, const float* stats, float* dx,
                               int64_t rows, int64_t d, void* stream);
// grad_g[i] += sum_r dy * xhat; grad_b[i] += sum_r dy, as column reductions (above). scratch:
// 2 * column_sum_scratch(rows, d) floats (may be null when that is 0).
void layer_norm_backward_weight(const float* x, const float* dy, const float* stats, float* grad_g, float* grad_b,
                                int64_t rows, int64_t d, float* scratch, void* stream);

// Causal softmax of attention, in place on rows of p [rows, seq] (rows = batch * heads * seq;
// row r is query i = r % seq): p[r, j] = exp(scale * (p[r, j] - max)) / sum over j <= i, and
// 0 for j > i (the mask), as exec/layers/attention.cc (scale = 1 / sqrt(dh), > 0).
void causal_softmax_forward(float* p, int64_t rows, int64_t seq, float scale, void* stream);
// Its backward, in place on d [rows, seq] (the gradient of the probabilities p on entry):
// d[r, j] = p[r, j] * (d[r, j] - sum_{k <= i} p[r, k] d[r, k]) * scale for j <= i, else 0.
void causal_softmax_backward(const float* p, float* d, int64_t rows, int64_t seq, float scale, void* stream);

// Softmax + cross-entropy, fused: per row r of x [n, c], stats[r] = {max, log(sum exp(x - max))}
// and row_loss[r] = -(x[r, t_r] - max - lse); loss[0] = mean of row_loss (summed in double, in
// order). A target that is not a class id in [0, c) makes its row's loss NaN.
void softmax_xent_forward(const float* x, const float* targets, float* stats, double* row_loss, float* loss, int64_t n,
                          int64_t c, void* stream);
// dx[r, i] = (exp(x - max - lse) - [i == t_r]) * grad[0] / n: the softmax is recomputed from x
// and the stats, so no [n, c] probabilities are kept.
void softmax_xent_backward(const float* x, const float* targets, const float* stats, const float* grad, float* dx,
                           int64_t n, int64_t c, void* stream);
// loss[0] = mean (x - t)^2 (double accumulation, in order); dx = 2 * grad[0] / n * (x - t).
void mse_forward(const float* x, const float* t, float* loss, int64_t n, void* stream);
void mse_backward(const float* x, const float* t, const float* grad, float* dx, int64_t n, void* stream);

// Optimizer steps with the CPU Optimizer's formulas (exec/optimizer.h). momentum may be null
// (plain SGD). c1, c2: Adam's bias corrections 1 / (1 - beta^t).
void sgd_step(float* p, const float* g, float* momentum, int64_t n, float lr, float mu, float wd, void* stream);
void adam_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float b1, float b2, float c1,
               float c2, float eps, float wd, void* stream);

}  // namespace pw::exec::cuda::kernels
