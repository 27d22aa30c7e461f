#include "whatif/runner.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <thread>
#include <vector>

namespace pw::whatif {

ProgressMode progress_mode(bool force, bool no_progress) {
  if (no_progress) return ProgressMode::off;
  if (isatty(STDERR_FILENO)) return ProgressMode::bar;
  return force ? ProgressMode::lines : ProgressMode::lines_when_slow;
}

ProgressBar::ProgressBar(std::FILE* out, size_t total, std::string label, ProgressMode mode,
                         std::chrono::milliseconds heartbeat)
    : out_(out),
      total_(total),
      label_(std::move(label)),
      mode_(out ? mode : ProgressMode::off),
      enabled_(mode_ != ProgressMode::off),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if ((mode_ == ProgressMode::lines || mode_ == ProgressMode::lines_when_slow) && heartbeat.count() > 0)
    heartbeat_ = std::thread([this, heartbeat] { heartbeat_main(heartbeat); });
  // A bar is redrawn every second while no item finishes, so its clock and estimate move.
  if (mode_ == ProgressMode::bar && heartbeat.count() > 0)
    heartbeat_ = std::thread([this] { heartbeat_main(std::chrono::seconds(1)); });
}

ProgressBar::~ProgressBar() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A bar abandoned by an exception ends its line so the error message starts on a new one.
    if (mode_ == ProgressMode::bar && !finished_ && done_.load() > 0) std::fputc('\n', out_);
    finished_ = true;
  }
  stop_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

std::string ProgressBar::render_line(size_t done, double elapsed_s) const {
  size_t total = std::max<size_t>(total_, 1);
  char buf[96];
  std::snprintf(buf, sizeof buf, ": %zu/%zu %d%% %.1f s", done, total_,
                static_cast<int>(100 * std::min(done, total) / total), elapsed_s);
  return label_ + buf + left_text(done, elapsed_s);
}

std::string ProgressBar::left_text(size_t done, double elapsed_s) const {
  if (done == 0 || done >= total_) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, ", ~%.0f s left", elapsed_s * static_cast<double>(total_ - done) / done);
  return buf;
}

void ProgressBar::print_line_locked(size_t done) {
  auto now = std::chrono::steady_clock::now();
  last_draw_ = now;
  printed_any_ = true;
  if (done >= total_) printed_total_ = true;
  std::fprintf(out_, "%s\n", render_line(done, std::chrono::duration<double>(now - start_).count()).c_str());
  std::fflush(out_);
}

void ProgressBar::heartbeat_main(std::chrono::milliseconds period) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!finished_) {
    if (stop_cv_.wait_until(lock, last_draw_ + period, [this] { return finished_; })) return;
    if (std::chrono::steady_clock::now() < last_draw_ + period) continue;
    if (mode_ == ProgressMode::bar) draw(false);
    else print_line_locked(done_.load());
  }
}

std::string ProgressBar::render(size_t done, double elapsed_s) const {
  constexpr int kWidth = 30;
  size_t total = std::max<size_t>(total_, 1);
  int filled = static_cast<int>(kWidth * std::min(done, total) / total);
  char tail[96];
  std::snprintf(tail, sizeof tail, "] %zu/%zu %3d%% %.1f s", done, total_,
                static_cast<int>(100 * std::min(done, total) / total), elapsed_s);
  return label_ + " [" + std::string(filled, '#') + std::string(kWidth - filled, '.') + tail +
         left_text(done, elapsed_s);
}

void ProgressBar::draw(bool final_draw) {
  auto now = std::chrono::steady_clock::now();
  if (!final_draw && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = render(done_.load(), elapsed);
  std::fprintf(out_, "\r%s%s", line.c_str(), final_draw ? "\n" : "");
  std::fflush(out_);
}

void ProgressBar::advance(size_t n) {
  const size_t done = done_.fetch_add(n) + n;
  if (mode_ == ProgressMode::lines || mode_ == ProgressMode::lines_when_slow) {
    // Every tenth is printed once, whichever thread crosses it (a blocking lock: lines are rare).
    const size_t tenth = 10 * std::min(done, total_) / std::max<size_t>(total_, 1);
    std::lock_guard<std::mutex> lock(mutex_);
    if (tenth > last_tenth_ && !finished_) {
      last_tenth_ = tenth;
      const bool quiet =
          mode_ == ProgressMode::lines_when_slow && std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1);
      if (!quiet) print_line_locked(done);
    }
    return;
  }
  if (!enabled_) return;
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (lock.owns_lock() && !finished_) draw(false);
}

void ProgressBar::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (mode_ == ProgressMode::bar) draw(true);
    else if ((mode_ == ProgressMode::lines || (mode_ == ProgressMode::lines_when_slow && printed_any_)) &&
             !printed_total_)
      print_line_locked(done_.load());
  }
  stop_cv_.notify_all();
}

int available_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn, ProgressBar* progress) {
  if (threads <= 0) threads = available_threads();
  size_t workers = std::min<size_t>(static_cast<size_t>(threads), n);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  size_t error_index = std::numeric_limits<size_t>::max();
  std::exception_ptr error;

  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (i < error_index) error_index = i, error = std::current_exception();
        failed.store(true);
        return;
      }
      if (progress) progress->advance();
    }
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(workers);
    for (size_t t = 0; t < workers; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace pw::whatif
