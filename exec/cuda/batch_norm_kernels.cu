// Batch normalization with statistics groups (declared in cnn_kernels.h): one block per
// (group, channel) for the reductions (double sums, a fixed tree), one thread per element
// for the elementwise passes, one thread per channel to sum the groups in order.
#include <cuda_runtime.h>

#include "exec/cuda/cnn_kernels.h"
#include "exec/cuda/kernel_util.cuh"

namespace pw::exec::cuda::kernels {

namespace {

// blockIdx.x = k * c + channel.
__global__ void stats_k(const float* x, float* mean, float* var, BatchNormShape s) {
  const int64_t k = blockIdx.x / s.c, c = blockIdx.x % s.c;
  const int64_t m = bn_group_samples(s, k) * s.spatial;
  double sum = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) sum += x[bn_element(s, k, c, j)];
  const double mu = block_sum(sum) / static_cast<double>(m);
  double sq = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const double d = x[bn_element(s, k, c, j)] - mu;
    sq += d * d;
  }
  const double v = block_sum(sq) / static_cast<double>(m);
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = static_cast<float>(mu);
    var[blockIdx.x] = static_cast<float>(v);
  }
}

__global__ void forward_k(const float* x, const float* gamma, const float* beta, const float* mean, const float* var,
                          float* y, BatchNormShape s) {
  const int64_t n = s.batch * s.c * s.spatial;
  for (int64_t i = global_index(); i < n; i += global_stride())
    y[i] = bn_forward_element(x, gamma, beta, mean, var, s, i);
}

__global__ void backward_reduce_k(const float* x, const float* dy, const float* mean, const float* var, float* part,
                                  BatchNormShape s) {
  const int64_t k = blockIdx.x / s.c, c = blockIdx.x % s.c;
  const int64_t m = bn_group_samples(s, k) * s.spatial;
  const float mu = mean[blockIdx.x], rstd = 1.0f / sqrtf(var[blockIdx.x] + kBatchNormEps);
  double dg = 0, db = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const int64_t e = bn_element(s, k, c, j);
    dg += static_cast<double>(dy[e]) * ((x[e] - mu) * rstd);
    db += dy[e];
  }
  dg = block_sum(dg);
  db = block_sum(db);
  if (threadIdx.x == 0) {
    part[(k * 2) * s.c + c] = static_cast<float>(dg);
    part[(k * 2 + 1) * s.c + c] = static_cast<float>(db);
  }
}

__global__ void backward_input_k(const float* x, const float* dy, const float* gamma, const float* mean,
                                 const float* var, const float* part, float* dx, BatchNormShape s) {
  const int64_t n = s.batch * s.c * s.spatial;
  for (int64_t i = global_index(); i < n; i += global_stride())
    dx[i] = bn_input_grad_element(x, dy, gamma, mean, var, part, s, i);
}

__global__ void finish_k(const float* part, const float* mean, const float* var, float* dgb, float* rm, float* rv,
                         float momentum, BatchNormShape s) {
  const int64_t c = global_index();
  if (c >= s.c) return;
  float g = 0.0f, b = 0.0f, m_run = rm[c], v_run = rv[c];
  const float keep = 1.0f - momentum;
  for (int64_t k = 0; k < s.groups; ++k) {
    g = __fadd_rn(g, part[(k * 2) * s.c + c]);
    b = __fadd_rn(b, part[(k * 2 + 1) * s.c + c]);
    const float unbias = bn_unbias(s, k);
    m_run = __fadd_rn(__fmul_rn(keep, m_run), __fmul_rn(momentum, mean[k * s.c + c]));
    v_run = __fadd_rn(__fmul_rn(keep, v_run), __fmul_rn(__fmul_rn(momentum, unbias), var[k * s.c + c]));
  }
  dgb[c] = g;
  dgb[s.c + c] = b;
  rm[c] = m_run;
  rv[c] = v_run;
}

}  // namespace

void batch_norm_stats(const float* x, float* mean, float* var, const BatchNormShape& s, void* st) {
  stats_k<<<static_cast<unsigned>(s.groups * s.c), kReduceThreads, 0, as_stream(st)>>>(x, mean, var, s);
  check_launch("batch_norm_stats");
}

void batch_norm_forward(const float* x, const float* gamma, const float* beta, const float* mean, const float* var,
                        float* y, const BatchNormShape& s, void* st) {
  forward_k<<<grid_for(s.batch * s.c * s.spatial), kThreads, 0, as_stream(st)>>>(x, gamma, beta, mean, var, y, s);
  check_launch("batch_norm_forward");
}

void batch_norm_backward_reduce(const float* x, const float* dy, const float* mean, const float* var, float* part,
                                const BatchNormShape& s, void* st) {
  backward_reduce_k<<<static_cast<unsigned>(s.groups * s.c), kReduceThreads, 0, as_stream(st)>>>(x, dy, mean, var, part,
                                                                                                 s);
  check_launch("batch_norm_backward_reduce");
}

void batch_norm_backward_input(const float* x, const float* dy, const float* gamma, const float* mean, const float* var,
                               const float* part, float* dx, const BatchNormShape& s, void* st) {
  backward_input_k<<<grid_for(s.batch * s.c * s.spatial), kThreads, 0, as_stream(st)>>>(x, dy, gamma, mean, var, part,
                                                                                        dx, s);
  check_launch("batch_norm_backward_input");
}

void batch_norm_finish(const float* part, const float* mean, const float* var, float* dgb, float* running_mean,
                       float* running_var, float momentum, const BatchNormShape& s, void* st) {
  finish_k<<<static_cast<unsigned>((s.c + kThreads - 1) / kThreads), kThreads, 0, as_stream(st)>>>(
      part, mean, var, dgb, running_mean, running_var, momentum, s);
  check_launch("batch_norm_finish");
}

}  // namespace pw::exec::cuda::kernels
