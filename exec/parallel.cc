#include "exec/parallel.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <mutex>

namespace pw::exec {

int max_threads() { return omp_get_max_threads(); }

void set_num_threads(int n) { omp_set_num_threads(std::max(1, n)); }

int parallel_chunks(int64_t n, int64_t min_per_thread) {
  if (n <= 0) return 0;
  const int64_t by_size = std::max<int64_t>(1, n / std::max<int64_t>(1, min_per_thread));
  if (omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(by_size, omp_get_max_threads()));
}

void parallel_for_chunks(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn, int64_t min_per_thread) {
  const int chunks = parallel_chunks(n, min_per_thread);
  if (chunks <= 0) return;
  if (chunks == 1) {
    fn(0, 0, n);
    return;
  }
  std::exception_ptr error;
  std::mutex mu;
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int t = 0; t < chunks; ++t) {
    const int64_t begin = n * t / chunks;
    const int64_t end = n * (t + 1) / chunks;
    try {
      if (begin < end) fn(t, begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

void parallel_for(int64_t n, const RangeFn& fn, int64_t min_per_thread) {
  parallel_for_chunks(
      n, [&](int, int64_t b, int64_t e) { fn(b, e); }, min_per_thread);
}

}  // namespace pw::exec
