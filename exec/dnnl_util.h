// oneDNN helpers private to exec/: the CPU engine, a per-thread stream, and a cache of matmul
// primitives keyed by their full description ("describe, create once, execute many").
// oneDNN types never leave exec/ (this header is included only by exec/*.cc and exec/layers/*).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <dnnl.hpp>

namespace pw::exec {

dnnl::engine& cpu_engine();
// One stream per thread (stages run on different threads).
dnnl::stream& cpu_stream();

// A matrix (or a batch of matrices: 3-D/4-D) as dims + strides in elements.
struct MatView {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};
// Logical [rows, cols] stored row-major.
inline MatView row_major(int64_t rows, int64_t cols) { return {{rows, cols}, {cols, 1}}; }
// Logical [rows, cols] stored as its transpose ([cols, rows] row-major), oneDNN tag "ba".
inline MatView col_major(int64_t rows, int64_t cols) { return {{rows, cols}, {1, rows}}; }

dnnl::memory::desc make_desc(const MatView& v);

// C = A·B (+ bias[N] broadcast) or, with accumulate, C += A·B. Not thread-safe (one per layer).
class MatmulCache {
 public:
  void run(const MatView& a, const float* A, const MatView& b, const float* B, const MatView& c,
           float* C, const float* bias = nullptr, bool accumulate = false);
  size_t size() const { return cache_.size(); }

 private:
  std::map<std::vector<int64_t>, dnnl::matmul> cache_;
};

// GELU, tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), on oneDNN's JIT eltwise
// kernels (vectorized; the libm tanhf loop was a third of a GPT block's time). y = gelu(x);
// dx = gelu'(x) * dy. n elements, contiguous; y may not alias x. Primitives are cached per
// thread and per n; thread-safe.
void gelu_tanh_forward(const float* x, float* y, int64_t n);
void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t n);

}  // namespace pw::exec
