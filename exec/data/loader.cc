#include "exec/data/loader.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <stdexcept>
#include <utility>

#include "models/error.h"

namespace pw::exec {

namespace {

int64_t since_ns(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

DataLoader::DataLoader(std::unique_ptr<DataSource> source, int64_t rows, int capacity)
    : source_(std::move(source)),
      rows_(rows),
      capacity_(capacity),
      describe_(source_->describe()),
      consumed_(source_->state()) {
  PW_CHECK(rows_ >= 1 && capacity_ >= 0, "DataLoader: rows >= 1 and capacity >= 0 required");
  start();
}

DataLoader::~DataLoader() { stop(); }

void DataLoader::start() {
  if (capacity_ == 0) return;
  stop_ = false;
  bind_pending_ = static_cast<bool>(bind_);
  // The producer never takes a process-directed signal (SIGINT, SIGTERM, ...): they go to the
  // threads that poll for them (the driver, whose stop handler runs on its own stack,
  // tools/signals.h). The thread inherits the mask it starts with.
  sigset_t async_signals, old;
  sigemptyset(&async_signals);
  for (const int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU})
    sigaddset(&async_signals, sig);
  pthread_sigmask(SIG_BLOCK, &async_signals, &old);
  producer_ = std::thread([this] { produce(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void DataLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  not_full_.notify_all();
  if (producer_.joinable()) producer_.join();
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
}

void DataLoader::bind_producer(std::function<void()> bind) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  bind_ = std::move(bind);
  bind_pending_ = static_cast<bool>(bind_);
}

void DataLoader::produce() {
  for (;;) {
    std::function<void()> bind;
    {
      std::unique_lock<std::mutex> lock(mu_);
      not_full_.wait(lock, [this] { return stop_ || static_cast<int>(queue_.size()) < capacity_; });
      if (stop_) return;
      if (bind_pending_) {
        bind = bind_;
        bind_pending_ = false;
      }
    }
    if (bind) bind();
    Item item;
    try {
      item.batch = source_->next(rows_);
      item.after = source_->state();
    } catch (...) { item.error = std::current_exception(); }
    const bool failed = static_cast<bool>(item.error);
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(item));
      max_queued_ = std::max(max_queued_, static_cast<int>(queue_.size()));
    }
    not_empty_.notify_one();
    if (failed) return;  // the consumer rethrows it; nothing after it is drawn
  }
}

Batch DataLoader::next() {
  if (failed_) rethrow(failed_);
  const auto t0 = std::chrono::steady_clock::now();
  if (capacity_ == 0) {
    Batch b;
    try {
      b = source_->next(rows_);
    } catch (...) {
      failed_ = std::current_exception();
      rethrow(failed_);
    }
    consumed_ = source_->state();
    wait_ns_ += since_ns(t0);
    return b;
  }
  Item item;
  {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [this] { return !queue_.empty(); });
    item = std::move(queue_.front());
    queue_.pop_front();
  }
  not_full_.notify_one();
  wait_ns_ += since_ns(t0);
  if (item.error) {
    failed_ = item.error;
    rethrow(failed_);
  }
  consumed_ = item.after;
  return std::move(item.batch);
}

void DataLoader::restore(const DataState& s) {
  stop();
  source_->restore(s);
  consumed_ = source_->state();
  failed_ = nullptr;
  start();
}

int DataLoader::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

int DataLoader::max_queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_queued_;
}

void DataLoader::rethrow(const std::exception_ptr& e) const {
  try {
    std::rethrow_exception(e);
  } catch (const InputError& x) {
    throw InputError(std::string("data loader: ") + x.what());
  } catch (const std::exception& x) { throw std::runtime_error(std::string("data loader: ") + x.what()); } catch (...) {
    throw std::runtime_error("data loader: unknown exception from the data source");
  }
}

}  // namespace pw::exec
