// Parallel execution of independent what-if evaluations, with a progress bar.
//
// parallel_for runs fn(i) for every i in [0, n) on `threads` std::threads (0 = the number
// of hardware threads), each taking the next index from a shared counter, so the cost of
// uneven points balances out. fn must be safe to call concurrently for different indices
// and should write its result to a slot owned by index i (results then do not depend on
// the thread count). If calls throw, the remaining indices are skipped, all threads are
// joined, and the exception of the smallest failing index is rethrown (deterministic).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>

namespace pw::whatif {

// A one-line progress bar redrawn in place with '\r' on `out` (normally stderr), at most
// every 100 ms: "label [#####.....] done/total pct% elapsed s". advance() is thread-safe.
// A disabled bar prints nothing. finish() draws the final state and a newline (once).
class ProgressBar {
 public:
  ProgressBar(std::FILE* out, size_t total, std::string label, bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(size_t n = 1);
  void finish();
  size_t done() const { return done_.load(); }
  // The line as it would be drawn now (without '\r'), for tests.
  std::string render(size_t done, double elapsed_s) const;

 private:
  void draw(bool final_draw);

  std::FILE* out_;
  size_t total_;
  std::string label_;
  bool enabled_;
  bool finished_ = false;
  std::atomic<size_t> done_{0};
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// Hardware threads, at least 1.
int available_threads();

void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn,
                  ProgressBar* progress = nullptr);

}  // namespace pw::whatif
