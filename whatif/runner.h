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
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace pw::whatif {

// How progress is shown: nothing; a bar redrawn in place (a terminal); or whole lines, for a
// pipe or a log file, where '\r' redraws would pile up or be invisible. `lines_when_slow`
// prints lines only once the work has run for a second, so quick runs (and their error
// messages) stay uncluttered.
enum class ProgressMode { off, bar, lines, lines_when_slow };

// The mode for a command's --progress / --no-progress flags: off with no_progress; a bar on a
// terminal; on a pipe, lines (from the start with --progress, else lines_when_slow).
ProgressMode progress_mode(bool force, bool no_progress);

// Progress of `total` work items on `out` (normally stderr). advance() is thread-safe.
// - bar: one line redrawn in place with '\r', at most every 100 ms:
//   "label [#####.....] done/total pct% elapsed s, ~left s left"; finish() draws the final state
//   and a newline. Every line (both modes) ends with the estimate of what is left while
//   0 < done < total.
// - lines: "label: done/total pct% elapsed s" on its own line each time another tenth of the
//   work is done, and from a heartbeat thread every `heartbeat` (10 s) while nothing else was
//   printed, so a long computation with few items still shows it is alive. finish() prints
//   the last line unless 100% was already printed.
// - lines_when_slow: as lines, but nothing before 1 s has passed; finish() then prints the
//   last line only if an earlier one was printed.
// - off (or out == nullptr): prints nothing.
class ProgressBar {
 public:
  ProgressBar(std::FILE* out, size_t total, std::string label, ProgressMode mode,
              std::chrono::milliseconds heartbeat = std::chrono::seconds(10));
  ProgressBar(std::FILE* out, size_t total, std::string label, bool enabled)
      : ProgressBar(out, total, std::move(label), enabled ? ProgressMode::bar : ProgressMode::off) {}
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(size_t n = 1);
  void finish();
  size_t done() const { return done_.load(); }
  // The line as it would be drawn now (without '\r'), for tests.
  std::string render(size_t done, double elapsed_s) const;
  std::string render_line(size_t done, double elapsed_s) const;
  // ", ~N s left" from the mean time per item so far (empty before the first item and at the end).
  std::string left_text(size_t done, double elapsed_s) const;

 private:
  void draw(bool final_draw);
  void print_line_locked(size_t done);  // lines modes; mutex_ held
  void heartbeat_main(std::chrono::milliseconds period);

  std::FILE* out_;
  size_t total_;
  std::string label_;
  ProgressMode mode_;
  bool enabled_;
  bool finished_ = false;
  size_t last_tenth_ = 0;  // lines modes: tenths of the work already reported
  bool printed_total_ = false;
  bool printed_any_ = false;
  std::condition_variable stop_cv_;
  std::thread heartbeat_;
  std::atomic<size_t> done_{0};
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// Hardware threads, at least 1.
int available_threads();

void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn, ProgressBar* progress = nullptr);

}  // namespace pw::whatif
