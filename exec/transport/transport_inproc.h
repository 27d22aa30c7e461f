// In-process transport: endpoints are threads of one process, messages are moved (the tensor
// buffers change owner, nothing is copied).
//
// Each destination endpoint keeps a mailbox of delivered messages keyed by (source, tag) and
// the set of receives it has posted. A message for a posted receive is always accepted; at
// most `capacity` unexpected (not yet asked for) messages per (src, dst) channel are buffered,
// further sends stay pending with the sender until the receiver takes one. This bound is what
// keeps a fast producer from running arbitrarily far ahead, and because posted receives always
// match, out-of-order receives can never deadlock on a full channel.
//
// Waiting spins for up to `spin` (yielding) before sleeping on a condition variable, which
// keeps the hand-off latency low when every worker has its own core.
// Thread-safety: as Transport (one thread per endpoint); all methods are safe to call
// concurrently from different endpoints' threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "exec/transport/transport.h"

namespace pw::exec {

class InProcTransport final : public Transport {
 public:
  explicit InProcTransport(int num_endpoints, int capacity = 4,
                           std::chrono::nanoseconds spin = std::chrono::microseconds(50));
  ~InProcTransport() override;

  int num_endpoints() const override { return static_cast<int>(eps_.size()); }
  std::unique_ptr<Request> isend(int src, int dst, const MessageTag& tag, Message msg) override;
  std::unique_ptr<Request> irecv(int dst, int src, const MessageTag& tag) override;
  uint64_t progress_epoch(int endpoint) const override;
  bool wait_for_progress(int endpoint, uint64_t seen_epoch, Clock::time_point deadline) override;
  void cancel() override;
  bool cancelled() const override { return cancelled_.load(std::memory_order_acquire); }
  void reset() override;

  int capacity() const { return capacity_; }
  // Delivered but not yet taken messages at `dst` (all sources).
  size_t buffered(int dst) const;
  // Unexpected (unmatched at delivery) messages from src buffered at dst.
  int unexpected(int src, int dst) const;

 private:
  struct Key {
    int src = 0;
    MessageTag tag;
    auto operator<=>(const Key&) const = default;
  };
  struct Slot {
    Message msg;
    bool unexpected = false;
  };
  struct Endpoint {
    mutable std::mutex mu;
    std::condition_variable cv;
    std::atomic<uint64_t> epoch{0};
    std::map<Key, Slot> arrived;
    std::set<Key> posted;
    std::vector<int> unexpected_from;  // per source endpoint
  };
  class SendRequest;
  class RecvRequest;

  void check_endpoint(int e, const char* what) const;
  bool try_deposit(int src, int dst, const MessageTag& tag, Message& msg);
  bool try_take(int dst, int src, const MessageTag& tag, Message* out);
  void post(int dst, int src, const MessageTag& tag);
  void bump(int endpoint);

  std::vector<std::unique_ptr<Endpoint>> eps_;
  int capacity_;
  std::chrono::nanoseconds spin_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace pw::exec
