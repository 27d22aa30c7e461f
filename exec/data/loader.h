// DataLoader: a DataSource's batches of `rows` rows, prepared ahead on a producer thread so that
// drawing them overlaps the computation that consumes them (DESIGN.md: data is "either in the
// cost model or shown to overlap").
//
// Sequence: next() returns exactly the batches that calling source.next(rows) repeatedly on
// the caller's thread would (capacity 0 does just that, with no thread): while the producer
// runs it is the only user of the source, and it draws in order.
// Bounded queue: with capacity c > 0 the producer starts in the constructor (on the
// constructing thread's CPU affinity), and draws a batch only while fewer than c are queued,
// so at most c batches wait in the queue (plus the one next() is handing out).
// Position: state() is the source's position after the batches next() has returned, not after
// those prepared ahead, so a checkpoint written at a step boundary resumes exactly;
// restore() stops the producer, drops what it prepared, repositions the source and restarts it.
// Errors: an exception the source throws on the producer is rethrown by the next() that would
// have returned that batch (and by every later one), with the message prefixed by
// "data loader: " and the kind kept (InputError stays InputError, anything else becomes
// std::runtime_error); the batches drawn before it are returned normally.
// Shutdown: the destructor (and restore) ask the producer to stop; it finishes the batch it is
// drawing (one source.next), starts no other, and is joined. No path waits on a full queue
// once stop is asked, so an early exit (a signal, an exception) cannot hang on the loader.
// Thread-safety: next, state, restore and the statistics may be called from any thread but not
// concurrently (callers serialize them, e.g. exec/runtime/run_setup.h's BatchSlicer).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "exec/data/data.h"

namespace pw::exec {

// Mini-batches prepared ahead by `run` and `train` (--prefetch); 0 draws on the consumer.
inline constexpr int kDefaultPrefetch = 2;

// The rule behind the "data loading is the bottleneck" note of `run` and `train`: over the
// timed steps, the consumer waited for batches (DataLoader::wait_ns) more than
// kDataBoundShare of the wall time. With prefetching the consumer waits only when the producer
// cannot keep up (a faster producer keeps the queue full and the wait near zero); without, the
// wait is all the drawing time.
inline constexpr double kDataBoundShare = 0.10;
inline bool data_loading_bound(double wait_s, double wall_s) { return wall_s > 0 && wait_s > kDataBoundShare * wall_s; }

class DataLoader {
 public:
  // rows >= 1, capacity >= 0 (PW_CHECK: callers validate flags).
  DataLoader(std::unique_ptr<DataSource> source, int64_t rows, int capacity);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  Batch next();
  DataState state() const { return consumed_; }
  void restore(const DataState& s);
  const std::string& describe() const { return describe_; }
  int capacity() const { return capacity_; }
  // Runs `bind` on the producer thread before its next draw, and again first thing on every
  // producer restore() starts: to pin the producer where its draws cost least (the pipeline
  // runtime: the last stage's worker, idle while the pipeline fills, or cores no worker uses;
  // exec/runtime/run_pipeline.h). Capacity 0: nothing to bind (draws run on the caller).
  void bind_producer(std::function<void()> bind);

  // Time next() spent waiting for a batch (capacity 0: drawing it), summed since construction.
  int64_t wait_ns() const { return wait_ns_; }
  // Batches queued now, and the most ever queued at once (tests: never above capacity).
  int queued() const;
  int max_queued() const;

 private:
  struct Item {
    Batch batch;
    DataState after;  // the source's position after drawing `batch`
    std::exception_ptr error;
  };
  void start();
  void stop();
  void produce();
  [[noreturn]] void rethrow(const std::exception_ptr& e) const;

  std::unique_ptr<DataSource> source_;
  const int64_t rows_;
  const int capacity_;
  const std::string describe_;
  DataState consumed_;
  int64_t wait_ns_ = 0;
  std::exception_ptr failed_;  // the producer's error, once next() has reached it

  mutable std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Item> queue_;
  int max_queued_ = 0;
  bool stop_ = false;
  std::function<void()> bind_;  // bind_producer's, kept for restarts
  bool bind_pending_ = false;   // the producer has not run bind_ yet
  std::thread producer_;
};

}  // namespace pw::exec
