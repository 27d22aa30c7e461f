// Max and average pooling (declared in cnn_kernels.h): one thread per output element forward,
// one per input element backward (cnn_index.h's element functions).
#include <cuda_runtime.h>

#include "exec/cuda/cnn_kernels.h"
#include "exec/cuda/kernel_util.cuh"

namespace pw::exec::cuda::kernels {

namespace {

__global__ void max_fwd_k(const float* x, float* y, float* arg, Window2d w, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    int64_t at = 0;
    y[i] = max_pool_element(x, w, i, &at);
    arg[i] = static_cast<float>(at);
  }
}

__global__ void avg_fwd_k(const float* x, float* y, Window2d w, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = avg_pool_element(x, w, i);
}

// arg null: average pooling.
__global__ void pool_bwd_k(const float* dy, const float* arg, float* dx, Window2d w, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) dx[i] = pool_grad_element(dy, arg, w, i);
}

}  // namespace

void max_pool_forward(const float* x, float* y, float* arg, const Window2d& w, int64_t batch, void* s) {
  const int64_t n = batch * w.channels * w.out_h() * w.out_w();
  max_fwd_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, y, arg, w, n);
  check_launch("max_pool_forward");
}

void max_pool_backward(const float* dy, const float* arg, float* dx, const Window2d& w, int64_t batch, void* s) {
  const int64_t n = batch * w.channels * w.in_h * w.in_w;
  pool_bwd_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(dy, arg, dx, w, n);
  check_launch("max_pool_backward");
}

void avg_pool_forward(const float* x, float* y, const Window2d& w, int64_t batch, void* s) {
  const int64_t n = batch * w.channels * w.out_h() * w.out_w();
  avg_fwd_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(x, y, w, n);
  check_launch("avg_pool_forward");
}

void avg_pool_backward(const float* dy, float* dx, const Window2d& w, int64_t batch, void* s) {
  const int64_t n = batch * w.channels * w.in_h * w.in_w;
  pool_bwd_k<<<grid_for(n), kThreads, 0, as_stream(s)>>>(dy, nullptr, dx, w, n);
  check_launch("avg_pool_backward");
}

}  // namespace pw::exec::cuda::kernels
