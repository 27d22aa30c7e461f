// Transport: moves the tensors that cross a pipeline cut between stage workers.
//
// Model (MPI-like, so an MPI implementation can sit behind the same interface):
// - Endpoints are numbered 0..num_endpoints()-1 (one per stage worker / device; an MPI rank
//   later). Self-sends (src == dst) are allowed: interleaved schedules may put two
//   neighbouring virtual stages on one device.
// - A message is matched by (source endpoint, MessageTag). Tags are unique per iteration:
//   (iteration, producing virtual stage, micro-batch, direction). Matching is not FIFO: a
//   receiver may ask for tags in any order.
// - isend() and irecv() never block. A send completes once the message has been handed to
//   the receiver side (a posted receive always accepts its message; otherwise at most
//   `capacity` unexpected messages are buffered per (src, dst) channel and further sends
//   stay pending with the sender). Pending requests progress when test() is called on them.
// - wait_for_progress() blocks the calling endpoint until something it may care about
//   happened (a message arrived for it, a receiver took one of its messages or posted a
//   receive it could satisfy), the deadline passed, or the transport was cancelled.
// - cancel() makes every current and later wait throw TransportCancelled (used to unwind
//   all workers when one of them fails).
//
// Ownership: a Message owns its tensors; isend takes it by value, and the receiver gets the
// same buffers back (zero-copy for the in-process transport).
// Thread-safety: one thread per endpoint issues that endpoint's calls; a Request is used only
// by the thread that created it. Different endpoints may be driven concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/tensor.h"

namespace pw::exec {

// forward/backward: activations and gradients crossing a cut. reduce/broadcast: the weight-
// gradient all-reduce among the replicas of a stage (exec/runtime/replica_allreduce.h: reduce
// for its reduce-scatter steps, broadcast for its all-gather steps); their tags name the stage,
// and in micro_batch the all-reduce's round and ring step.
enum class Direction : uint8_t { forward = 0, backward = 1, reduce = 2, broadcast = 3 };

struct MessageTag {
  int iteration = 0;
  int stage = 0;  // virtual stage that produced the payload
  int micro_batch = 0;
  Direction dir = Direction::forward;
  auto operator<=>(const MessageTag&) const = default;
  bool operator==(const MessageTag&) const = default;
};

std::string to_string(const MessageTag& tag);  // "it 3 stage 1 mb 2 fwd" (bwd, reduce, bcast)

struct Message {
  std::vector<Tensor> tensors;  // every tensor crossing the cut, in the consumer's order
  int64_t weight_version = -1;  // PipeDream vertical sync: version chosen at stage 0; -1 none
  int64_t send_time_ns = 0;     // sender's clock (steady_clock ns) when isend was called
  // In-process only: the point in the sender's device queue after which the tensors are
  // complete (exec/device_streams.h; empty for host tensors). Not sent between processes.
  std::shared_ptr<void> fence;

  int64_t bytes() const {
    int64_t b = 0;
    for (const Tensor& t : tensors) b += t.bytes();
    return b;
  }
};

class TransportCancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Handle of one non-blocking operation. test() returns true once complete (and keeps
// returning true). For receives, take() hands over the message exactly once after completion.
class Request {
 public:
  virtual ~Request() = default;
  virtual bool test() = 0;
  virtual Message take() = 0;  // receives only; PW_CHECK-fails on sends or incomplete requests
};

class Transport {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Transport() = default;

  virtual int num_endpoints() const = 0;
  virtual std::unique_ptr<Request> isend(int src, int dst, const MessageTag& tag, Message msg) = 0;
  virtual std::unique_ptr<Request> irecv(int dst, int src, const MessageTag& tag) = 0;

  // A counter of events relevant to `endpoint`; read it before testing requests, then pass it
  // to wait_for_progress so that no wake-up is lost between the test and the wait.
  virtual uint64_t progress_epoch(int endpoint) const = 0;
  // Returns when progress_epoch(endpoint) != seen_epoch or the deadline passed (returns false
  // then). Throws TransportCancelled after cancel().
  virtual bool wait_for_progress(int endpoint, uint64_t seen_epoch, Clock::time_point deadline) = 0;

  // Collective tags (Direction::reduce / broadcast) must have micro_batch below this (the MPI
  // transport's tag space); unbounded unless an implementation says otherwise.
  virtual int collective_slots() const { return std::numeric_limits<int>::max(); }

  virtual void cancel() = 0;
  virtual bool cancelled() const = 0;
  // Clears cancellation and drops undelivered messages, so a new run can start.
  virtual void reset() = 0;
};

}  // namespace pw::exec
