// oneDNN helpers private to exec/: the CPU engine, a per-thread stream, and a cache of matmul
// primitives keyed by their full description ("describe, create once, execute many").
// oneDNN types never leave exec/ (this header is included only by exec/*.cc, exec/layers/* and
// its own test, tests/exec/dnnl_util_test.cc, which links oneDNN for it).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

namespace pw::exec {

dnnl::engine& cpu_engine();
// One stream per thread (stages run on different threads).
dnnl::stream& cpu_stream();
// A oneDNN memory object over caller-owned floats on the CPU engine (the primitive only reads
// a const buffer; oneDNN's API takes a non-const pointer).
dnnl::memory cpu_memory(const dnnl::memory::desc& d, const float* p);
// Executes `p` on this thread's stream with `args` and waits for it.
void run_primitive(dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args);

// A matrix (or a batch of matrices: 3-D/4-D) as dims + strides in elements. Fixed storage, so
// describing a matmul allocates nothing (a view is built for every call, see MatmulCache).
struct MatView {
  static constexpr int kMaxRank = 4;
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  std::array<int64_t, kMaxRank> strides{};

  MatView() = default;
  // Throws std::invalid_argument unless both lists have the same length, 1..kMaxRank.
  MatView(std::initializer_list<int64_t> d, std::initializer_list<int64_t> s);
};
// Logical [rows, cols] stored row-major.
inline MatView row_major(int64_t rows, int64_t cols) { return {{rows, cols}, {cols, 1}}; }
// Logical [rows, cols] stored as its transpose ([cols, rows] row-major), oneDNN tag "ba".
inline MatView col_major(int64_t rows, int64_t cols) { return {{rows, cols}, {1, rows}}; }

dnnl::memory::desc make_desc(const MatView& v);

// C = A·B (+ bias[N] broadcast) or, with accumulate, C += A·B. Not thread-safe (one per layer).
//
// Each distinct description (views, bias or not, accumulate or not) gets one entry holding the
// primitive, its memory objects and the argument map; a call finds the entry, points the memory
// objects at the caller's buffers (set_data_handle) and executes. So a call allocates nothing
// of its own: building descriptors, memory objects and the argument map on every call was
// ~50 mallocs per matmul, about a tenth of a small-gpt step, and its cost grew with how
// fragmented the heap was, i.e. with how many micro-batches a schedule keeps in flight
// (bench/RESULTS.md, "Per-call allocations"). A cache holds the few shapes one call site sees
// (full and ragged last micro-batch), so lookup is a linear scan, most recent first.
class MatmulCache {
 public:
  MatmulCache();
  ~MatmulCache();
  // A copy starts empty: entries hold memory objects bound to this cache's last buffers.
  MatmulCache(const MatmulCache&);
  MatmulCache& operator=(const MatmulCache&);
  MatmulCache(MatmulCache&&) noexcept;
  MatmulCache& operator=(MatmulCache&&) noexcept;

  void run(const MatView& a, const float* A, const MatView& b, const float* B, const MatView& c, float* C,
           const float* bias = nullptr, bool accumulate = false);
  // Distinct descriptions seen so far (one primitive each).
  size_t size() const { return entries_.size(); }

 private:
  struct Entry;
  std::vector<std::unique_ptr<Entry>> entries_;
  size_t last_ = 0;  // index of the entry used last
};

// GELU, tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), on oneDNN's JIT eltwise
// kernels (vectorized; the libm tanhf loop was a third of a GPT block's time). y = gelu(x);
// dx = gelu'(x) * dy. n elements, contiguous; y may not alias x. Primitives are cached per
// thread and per n; thread-safe.
void gelu_tanh_forward(const float* x, float* y, int64_t n);
void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t n);

}  // namespace pw::exec
