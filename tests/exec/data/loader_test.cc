// DataLoader (exec/data/loader.h): the same batches as drawing on the caller, a queue bounded
// by its capacity, the consumer's position for checkpoints, producer errors on the consumer,
// and a shutdown that never hangs. No timing: every wait is on a count.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "exec/data/loader.h"
#include "models/error.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

models::Model small_mlp() {
  models::ZooOptions z;
  z.batch = 8;
  z.depth = 2;
  z.width = 32;
  return models::build_zoo_model("mlp", z);
}

bool same(const Batch& a, const Batch& b) {
  return a.data.shape() == b.data.shape() && a.targets.shape() == b.targets.shape() &&
         std::memcmp(a.data.data(), b.data.data(), static_cast<size_t>(a.data.bytes())) == 0 &&
         std::memcmp(a.targets.data(), b.targets.data(), static_cast<size_t>(a.targets.bytes())) == 0;
}

// Batch k is filled with the value k; counts its draws; throws on draw `fail_at` (-1: never).
class CountingSource final : public DataSource {
 public:
  CountingSource(std::atomic<int>* draws, int fail_at, bool input_error)
      : draws_(draws), fail_at_(fail_at), input_error_(input_error) {}
  Batch next(int64_t batch) override {
    const int k = draws_->load();
    if (k == fail_at_) {
      if (input_error_) throw InputError("--data: file \"x.txt\" vanished");
      throw std::runtime_error("disk on fire");
    }
    Batch b{Tensor({batch, 1}), Tensor({batch, 1})};
    for (int64_t i = 0; i < batch; ++i) b.data.data()[i] = b.targets.data()[i] = static_cast<float>(k);
    ++*draws_;
    return b;
  }
  std::string describe() const override { return "counting"; }
  DataState state() const override { return {static_cast<uint64_t>(draws_->load()), draws_->load()}; }
  void restore(const DataState& s) override { draws_->store(static_cast<int>(s.batches)); }

 private:
  std::atomic<int>* draws_;
  int fail_at_;
  bool input_error_;
};

// Waits until `done()` holds; fails (instead of hanging) after a minute. Not a timing check:
// the condition is a count the producer reaches whatever the machine's speed.
template <class F>
void await(F done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!done()) {
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    std::this_thread::yield();
  }
}

}  // namespace

TEST_CASE("DataLoader: the background and synchronous loaders yield exactly the source's batches") {
  const models::Model m = small_mlp();
  auto direct = make_data_source(m, "", 9);
  DataLoader sync(make_data_source(m, "", 9), 8, 0);
  DataLoader ahead(make_data_source(m, "", 9), 8, 2);
  for (int k = 0; k < 6; ++k) {
    const Batch want = direct->next(8);
    CHECK(same(sync.next(), want));
    CHECK(same(ahead.next(), want));
    // The position is the consumer's, not the producer's (which is up to 2 batches further).
    CHECK(sync.state().rng == direct->state().rng);
    CHECK(ahead.state().rng == direct->state().rng);
    CHECK(ahead.state().batches == k + 1);
  }
  CHECK(ahead.describe() == direct->describe());
}

TEST_CASE("DataLoader: the queue never holds more than its capacity, and the producer stops there") {
  for (int capacity : {1, 2, 3}) {
    CAPTURE(capacity);
    std::atomic<int> draws{0};
    DataLoader loader(std::make_unique<CountingSource>(&draws, -1, false), 4, capacity);
    for (int k = 0; k < 8; ++k) {
      await([&] { return loader.queued() == capacity; });
      // A full queue: the producer draws only while fewer than `capacity` wait, so it has
      // drawn exactly the consumed batches plus the queued ones.
      CHECK(draws.load() == k + capacity);
      const Batch b = loader.next();
      CHECK(b.data.data()[0] == static_cast<float>(k));
    }
    CHECK(loader.max_queued() == capacity);
  }
}

TEST_CASE("DataLoader: restore drops the batches prepared ahead and continues from the consumer's position") {
  const models::Model m = small_mlp();
  DataLoader loader(make_data_source(m, "", 4), 8, 2);
  loader.next();
  loader.next();
  const DataState at = loader.state();
  const Batch b2 = loader.next(), b3 = loader.next();
  loader.restore(at);
  CHECK(loader.state().batches == 2);
  CHECK(same(loader.next(), b2));
  CHECK(same(loader.next(), b3));
  DataLoader fresh(make_data_source(m, "", 4), 8, 2);  // a resumed run's loader
  fresh.restore(at);
  CHECK(same(fresh.next(), b2));
}

TEST_CASE("DataLoader: a producer exception reaches the consumer after the good batches, kind and message kept") {
  for (int capacity : {0, 2}) {
    CAPTURE(capacity);
    std::atomic<int> draws{0};
    DataLoader loader(std::make_unique<CountingSource>(&draws, 3, true), 2, capacity);
    for (int k = 0; k < 3; ++k) CHECK(loader.next().data.data()[0] == static_cast<float>(k));
    CHECK_THROWS_WITH_AS(loader.next(), "data loader: --data: file \"x.txt\" vanished", InputError);
    CHECK_THROWS_AS(loader.next(), InputError);  // and stays failed
    CHECK(loader.state().batches == 3);
  }
  std::atomic<int> draws{0};
  DataLoader loader(std::make_unique<CountingSource>(&draws, 0, false), 2, 2);
  try {
    loader.next();
    FAIL("expected an exception");
  } catch (const InputError&) {
    FAIL("a runtime error must not become an input error");
  } catch (const std::runtime_error& e) { CHECK(std::string(e.what()) == "data loader: disk on fire"); }
}

TEST_CASE("DataLoader: destroying it with a full queue or before any next() joins the producer") {
  std::atomic<int> draws{0};
  {
    DataLoader loader(std::make_unique<CountingSource>(&draws, -1, false), 2, 2);
    await([&] { return loader.queued() == 2; });
  }  // the producer waits on a full queue: the destructor wakes and joins it
  CHECK(draws.load() == 2);
  for (int i = 0; i < 20; ++i) DataLoader quick(make_data_source(small_mlp(), "", 1), 8, 2);  // mid-draw
  std::atomic<int> failed{0};
  {
    DataLoader loader(std::make_unique<CountingSource>(&failed, 0, false), 2, 2);  // the producer has ended
  }
  CHECK(failed.load() == 0);
}

}  // namespace pw::exec

namespace pw::exec {

TEST_CASE("data_loading_bound: waiting for data more than 10% of the wall time, and only then") {
  CHECK(data_loading_bound(0.11, 1.0));
  CHECK_FALSE(data_loading_bound(0.10, 1.0));
  CHECK_FALSE(data_loading_bound(0.0, 2.0));
  CHECK_FALSE(data_loading_bound(0.5, 0.0));  // no timed step
}

TEST_CASE("DataLoader: bind_producer runs on the producer thread before its next draw, and again after a restore") {
  std::atomic<int> draws{0};
  DataLoader loader(std::make_unique<CountingSource>(&draws, -1, false), 4, 1);
  await([&] { return loader.queued() == 1; });  // the producer waits on a full queue
  std::atomic<int> binds{0};
  std::atomic<bool> on_consumer{false};
  const std::thread::id consumer = std::this_thread::get_id();
  loader.bind_producer([&] {
    if (std::this_thread::get_id() == consumer) on_consumer = true;
    ++binds;
  });
  CHECK(binds == 0);  // not before the producer draws again
  CHECK(loader.next().data.data()[0] == 0.0f);
  await([&] { return loader.queued() == 1; });
  CHECK(binds == 1);
  CHECK(loader.next().data.data()[0] == 1.0f);  // binding changes nothing drawn
  await([&] { return loader.queued() == 1; });
  CHECK(binds == 1);  // once per producer thread
  loader.restore(loader.state());
  await([&] { return loader.queued() == 1; });
  CHECK(binds == 2);  // the restarted producer binds first
  CHECK_FALSE(on_consumer);
  // Capacity 0: no producer, nothing to bind.
  std::atomic<int> sync_draws{0};
  DataLoader sync(std::make_unique<CountingSource>(&sync_draws, -1, false), 4, 0);
  sync.bind_producer([&] { ++binds; });
  sync.next();
  CHECK(binds == 2);
}

}  // namespace pw::exec
