// InterleavedTransport: a Transport for tests that runs its callers' threads one at a time and
// switches between them at every transport call (isend, irecv, Request::test, progress_epoch,
// wait_for_progress), the next thread drawn from a seeded generator. The in-process transport
// does each call atomically under its lock, so every interleaving of real threads is one of these
// schedules, and a seed replays its schedule exactly. Rare orders that a busy machine hits once in
// thousands of runs come up here in a few hundred seeds.
//
// wait_for_progress blocks the thread until its endpoint's epoch moves. When every unfinished
// thread is blocked so, nothing can ever wake them: the run is a deadlock, and every blocked call
// throws InterleavingDeadlock (its deadline is not waited for).
//
// run_interleaved(inner, n, seed, body): runs body(k, transport) on threads k = 0..n-1 under the
// schedule of `seed`; returns false on a deadlock; rethrows the first other exception of a body.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <semaphore>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "exec/transport/transport_inproc.h"

namespace pw::exec::testing {

struct InterleavingDeadlock : std::runtime_error {
  InterleavingDeadlock() : std::runtime_error("every thread waits: deadlock") {}
};

class InterleavedTransport final : public exec::Transport {
 public:
  InterleavedTransport(exec::InProcTransport& inner, int threads, unsigned seed)
      : in_(inner), rng_(seed), state_(threads, State::ready), wait_ep_(threads), wait_seen_(threads) {
    for (int k = 0; k < threads; ++k) turn_of_.push_back(std::make_unique<std::binary_semaphore>(0));
  }

  // The calling thread's index (set by run_interleaved).
  static int& me() {
    static thread_local int k = -1;
    return k;
  }

  int num_endpoints() const override { return in_.num_endpoints(); }
  std::unique_ptr<exec::Request> isend(int src, int dst, const exec::MessageTag& tag, exec::Message msg) override {
    yield();
    return wrap(in_.isend(src, dst, tag, std::move(msg)));
  }
  std::unique_ptr<exec::Request> irecv(int dst, int src, const exec::MessageTag& tag) override {
    yield();
    return wrap(in_.irecv(dst, src, tag));
  }
  uint64_t progress_epoch(int endpoint) const override {
    const_cast<InterleavedTransport*>(this)->yield();  // a switch point too; the schedule is not the transport's state
    return in_.progress_epoch(endpoint);
  }
  bool wait_for_progress(int endpoint, uint64_t seen, Clock::time_point) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (deadlock_) throw InterleavingDeadlock();  // a caller that went on after the first throw
    state_[me()] = State::waiting;
    wait_ep_[me()] = endpoint;
    wait_seen_[me()] = seen;
    hand_over_and_wait(lock);
    return true;
  }
  void cancel() override {}
  bool cancelled() const override { return false; }
  void reset() override {}

  // Thread k: waits for its first turn; finish(): leaves the schedule.
  void start() {
    turn_of_[me()]->acquire();
    std::lock_guard<std::mutex> lock(mu_);
    if (deadlock_) throw InterleavingDeadlock();
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    state_[me()] = State::done;
    if (!deadlock_) pass();
  }
  void begin() {
    std::lock_guard<std::mutex> lock(mu_);
    pass();
  }
  bool deadlocked() const { return deadlock_; }

 private:
  enum class State { ready, waiting, done };
  class Wrapped final : public exec::Request {
   public:
    Wrapped(InterleavedTransport& t, std::unique_ptr<exec::Request> r) : t_(t), r_(std::move(r)) {}
    bool test() override {
      t_.yield();
      return r_->test();
    }
    exec::Message take() override { return r_->take(); }

   private:
    InterleavedTransport& t_;
    std::unique_ptr<exec::Request> r_;
  };
  std::unique_ptr<exec::Request> wrap(std::unique_ptr<exec::Request> r) {
    return std::make_unique<Wrapped>(*this, std::move(r));
  }
  void yield() {
    std::unique_lock<std::mutex> lock(mu_);
    if (deadlock_) throw InterleavingDeadlock();  // the schedule has ended: no turn is handed on
    state_[me()] = State::ready;
    hand_over_and_wait(lock);
  }
  void hand_over_and_wait(std::unique_lock<std::mutex>& lock) {
    pass();
    lock.unlock();
    turn_of_[me()]->acquire();  // only the thread given the turn wakes
    lock.lock();
    if (deadlock_) throw InterleavingDeadlock();
  }
  // Under mu_: the turn goes to a random thread that can run (ready, or waiting on an epoch that
  // has moved); none while some thread is unfinished is a deadlock.
  void pass() {
    std::vector<int> can;
    bool unfinished = false;
    for (int k = 0; k < static_cast<int>(state_.size()); ++k) {
      unfinished = unfinished || state_[k] != State::done;
      if (state_[k] == State::ready ||
          (state_[k] == State::waiting && in_.progress_epoch(wait_ep_[k]) != wait_seen_[k]))
        can.push_back(k);
    }
    if (can.empty()) {
      deadlock_ = unfinished;
      for (int k = 0; k < static_cast<int>(state_.size()); ++k)
        if (state_[k] != State::done) turn_of_[k]->release();  // each blocked thread throws
      return;
    }
    const int next = can[std::uniform_int_distribution<size_t>(0, can.size() - 1)(rng_)];
    state_[next] = State::ready;
    turn_of_[next]->release();
  }

  exec::InProcTransport& in_;
  std::mutex mu_;
  std::mt19937 rng_;
  std::vector<State> state_;
  std::vector<int> wait_ep_;
  std::vector<uint64_t> wait_seen_;
  std::vector<std::unique_ptr<std::binary_semaphore>> turn_of_;  // released: that thread's turn
  bool deadlock_ = false;
};

inline bool run_interleaved(exec::InProcTransport& inner, int threads, unsigned seed,
                            const std::function<void(int, exec::Transport&)>& body) {
  InterleavedTransport tr(inner, threads, seed);
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      InterleavedTransport::me() = k;
      try {
        tr.start();
        body(k, tr);
        tr.finish();
      } catch (const InterleavingDeadlock&) {
      } catch (...) {
        errors[k] = std::current_exception();
        tr.finish();
      }
    });
  tr.begin();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return !tr.deadlocked();
}

}  // namespace pw::exec::testing
