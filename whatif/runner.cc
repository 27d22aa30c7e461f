#include "whatif/runner.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <thread>
#include <vector>

namespace pw::whatif {

ProgressBar::ProgressBar(std::FILE* out, size_t total, std::string label, bool enabled)
    : out_(out), total_(total), label_(std::move(label)), enabled_(enabled && out != nullptr),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  // A bar abandoned by an exception ends its line so the error message starts on a new one.
  std::lock_guard<std::mutex> lock(mutex_);
  if (enabled_ && !finished_ && done_.load() > 0) std::fputc('\n', out_);
}

std::string ProgressBar::render(size_t done, double elapsed_s) const {
  constexpr int kWidth = 30;
  size_t total = std::max<size_t>(total_, 1);
  int filled = static_cast<int>(kWidth * std::min(done, total) / total);
  char tail[96];
  std::snprintf(tail, sizeof tail, "] %zu/%zu %3d%% %.1f s", done, total_,
                static_cast<int>(100 * std::min(done, total) / total), elapsed_s);
  return label_ + " [" + std::string(filled, '#') + std::string(kWidth - filled, '.') + tail;
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
  done_.fetch_add(n);
  if (!enabled_) return;
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (lock.owns_lock() && !finished_) draw(false);
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (enabled_) draw(true);
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
