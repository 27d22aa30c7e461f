// BatchSlicer (exec/runtime/run_setup.h) with a worker drawing ahead (draw_ahead, as
// run_pipeline does when the workers own every core): the same mini-batches as drawing in
// order, a checkpoint position that ignores what was drawn ahead, no "waited for data" for
// it, and slicing a drawn batch while the next one is being drawn. No timing: the one wait
// below is for a count and gives up (fails) after a minute instead of hanging.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "exec/runtime/run_setup.h"

namespace pw::exec {
namespace {

// Batch k holds the value k in every row; draw number `block_at` waits in next() until
// release() (-1: never blocks).
class GatedSource final : public DataSource {
 public:
  explicit GatedSource(int block_at = -1) : block_at_(block_at) {}
  Batch next(int64_t batch) override {
    const int k = draws_;
    if (k == block_at_) {
      std::unique_lock<std::mutex> lock(mu_);
      blocked_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_; });
    }
    Batch b{Tensor({batch, 2}), Tensor({batch, 1})};
    for (int64_t i = 0; i < b.data.numel(); ++i) b.data.data()[i] = static_cast<float>(k);
    for (int64_t i = 0; i < b.targets.numel(); ++i) b.targets.data()[i] = static_cast<float>(k);
    ++draws_;
    return b;
  }
  std::string describe() const override { return "gated"; }
  DataState state() const override { return {static_cast<uint64_t>(1000 + draws_), draws_}; }
  void restore(const DataState& s) override { draws_ = static_cast<int>(s.batches); }

  bool wait_blocked() {  // true once a draw is blocked; false after a minute (the test fails)
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::minutes(1), [this] { return blocked_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::atomic<int> draws_{0};
  const int block_at_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool blocked_ = false, released_ = false;
};

// The first row's data and target values of iteration `it`'s mini-batch.
std::pair<float, float> row_values(BatchSlicer& s, int it) {
  Tensor d({1, 2}), t({1, 1});
  s.fill(it, 0, 1, &d, &t);
  return {d.data()[0], t.data()[0]};
}

float first_row(BatchSlicer& s, int it) {
  const auto [data, target] = row_values(s, it);
  CHECK(data == target);
  return data;
}

}  // namespace

TEST_CASE("BatchSlicer: drawing ahead hands out the same mini-batches, in order") {
  BatchSlicer plain(std::make_unique<GatedSource>(), 4, 0);
  BatchSlicer ahead(std::make_unique<GatedSource>(), 4, 0);
  for (int it = 0; it < 5; ++it) {
    plain.prepare(it);
    ahead.prepare(it);
    ahead.draw_ahead(it + 1);
    CHECK(first_row(plain, it) == static_cast<float>(it));
    CHECK(first_row(ahead, it) == static_cast<float>(it));
  }
}

TEST_CASE("BatchSlicer: a checkpoint position is after the batches handed out, not those drawn ahead") {
  BatchSlicer s(std::make_unique<GatedSource>(), 4, 0);
  CHECK(s.state().batches == 0);  // nothing handed out yet
  s.draw_ahead(0);
  CHECK(s.state().batches == 0);
  s.prepare(0);
  s.draw_ahead(1);
  s.prepare(1);
  s.draw_ahead(2);
  const DataState at = s.state();
  CHECK(at.batches == 2);  // batches 0 and 1 handed out; 2 was drawn ahead
  CHECK(at.rng == 1002);
  // Resuming from it draws batch 2 again, as iteration 0 of the resumed run.
  BatchSlicer resumed(std::make_unique<GatedSource>(), 4, 0);
  resumed.restore(at);
  resumed.prepare(0);
  CHECK(first_row(resumed, 0) == 2.0f);
  // restore() also drops what was drawn ahead and counts iterations from 0 again.
  s.restore(at);
  CHECK(s.state().batches == 2);
  s.prepare(0);
  CHECK(first_row(s, 0) == 2.0f);
}

TEST_CASE("BatchSlicer: a draw ahead is not waiting for data, and a batch it drew is not drawn again") {
  BatchSlicer s(std::make_unique<GatedSource>(), 4, 0);
  s.prepare(0);  // drawn on the caller: counted as waiting (DataLoader, capacity 0)
  const int64_t waited = s.wait_ns();
  CHECK(waited >= 0);
  s.draw_ahead(1);
  CHECK(s.wait_ns() == waited);
  s.prepare(1);  // drawn already
  CHECK(s.wait_ns() == waited);
  CHECK(first_row(s, 1) == 1.0f);
}

TEST_CASE("BatchSlicer: slicing a drawn batch does not wait for a draw ahead in progress") {
  auto src = std::make_unique<GatedSource>(/*block_at=*/1);
  GatedSource* gate = src.get();
  BatchSlicer s(std::move(src), 4, 0);
  s.prepare(0);
  std::thread drawer([&] { s.draw_ahead(1); });  // blocks inside the source's next()
  REQUIRE(gate->wait_blocked());
  // The current iteration's batch is sliced while the next one is being drawn. Were fill()
  // to wait for the draw, this would not return until release(): give up after a minute.
  auto sliced = std::async(std::launch::async, [&] { return row_values(s, 0); });
  const bool returned = sliced.wait_for(std::chrono::minutes(1)) == std::future_status::ready;
  gate->release();
  drawer.join();
  CHECK(returned);
  CHECK(sliced.get() == std::pair<float, float>{0.0f, 0.0f});
  s.prepare(1);
  CHECK(first_row(s, 1) == 1.0f);
}

}  // namespace pw::exec
