// MpiTransport: the Transport of a pipeline whose devices are MPI ranks (endpoint == rank of
// MPI_COMM_WORLD). Each process drives exactly one endpoint, its own rank: isend's src and
// irecv's dst must be world.rank().
//
// Threading: MPI_THREAD_FUNNELED (exec/transport/mpi_world.h). Every call, including test() and
// the destructors of requests, must come from the thread that created the World. MPI progresses
// only inside these calls: the runtime tests its pending sends after every op and polls while it
// waits, so a send never makes the compute wait, but a large (rendezvous) transfer advances only
// between ops.
//
// Wire format, per message, on a communicator of its own (a dup of MPI_COMM_WORLD):
// - a header of int64s: weight_version, send time, tensor count, then per tensor its rank and
//   dims (at most kMaxHeaderWords words: PW_CHECK);
// - then one MPI_FLOAT message per tensor, straight from the Tensor's buffer (no copy; the send
//   request owns the Message until MPI is done with it); the receiver allocates each tensor
//   from the header and receives into it. Same (source, tag, communicator) messages are
//   matched in order (MPI's non-overtaking rule), which orders header and payloads.
// Message::send_time_ns travels relative to the transport's epoch (set_epoch: a time point
// all ranks agreed on, e.g. right after a barrier) and is converted back to the receiver's
// steady clock, so transfer times stay meaningful across hosts.
//
// Tags: MessageTag (iteration mod window, stage, micro_batch, dir) is packed into one MPI tag
// ((it * stages + stage) * micro_batches + mb) * 2 + dir, window = min(1024, (tag_ub + 1) /
// (2 * stages * micro_batches)); construction throws InputError when the window is below 4
// (neighbouring ranks are at most one iteration apart; 4 leaves room). Tags outside the
// declared stages / micro-batches PW_CHECK-fail. With `collectives` (replicated stages) the
// tag space holds a second block after the point-to-point one, per iteration window, for the
// replicas' ring all-reduce messages (exec/runtime/replica_allreduce.h: micro_batch numbers the
// round and ring step, below C = max(micro_batches, ranks)): window * 2 * stages *
// micro_batches + ((it * stages + stage) * C + mb) * 2 + (dir == broadcast), and the window is
// computed from 2 * stages * (micro_batches + C); forward/backward tags keep the packing above.
//
// Device payloads (a rank's stages on a GPU, exec/device_ops.h): isend copies every device
// tensor to the host first (waiting for the stream that produced it, so the message's fence
// is then moot and dropped) and sends the host copy; the receiver gets host tensors and
// uploads them itself (exec/runtime/stage_worker.h). No CUDA-aware MPI is assumed.
//
// Self-sends (src == dst == rank, interleaved schedules) never touch MPI: the message is moved
// into a local mailbox, zero-copy.
//
// Waiting: wait_for_progress tests every outstanding request of this transport; it spins for
// `spin`, then sleeps with an exponential backoff (10 us doubling to 200 us), checks for abort
// notices of other ranks (throws PeerFailed, a TransportCancelled) and returns false at the
// deadline. cancel() is local to this rank (the runtime tells the peers, World::notify_failure).
// Not bounded like InProcTransport: unexpected messages are buffered by MPI.
#pragma once

#include <memory>

#include "exec/transport/mpi_world.h"
#include "exec/transport/transport.h"

namespace pw::exec {

class MpiTransport final : public Transport {
 public:
  static constexpr int kMaxHeaderWords = 512;

  MpiTransport(mpi::World& world, int num_stages, int num_micro_batches,
               std::chrono::nanoseconds spin = std::chrono::microseconds(50), bool collectives = false);
  ~MpiTransport() override;

  int num_endpoints() const override;
  std::unique_ptr<Request> isend(int src, int dst, const MessageTag& tag, Message msg) override;
  std::unique_ptr<Request> irecv(int dst, int src, const MessageTag& tag) override;
  uint64_t progress_epoch(int endpoint) const override;
  bool wait_for_progress(int endpoint, uint64_t seen_epoch, Clock::time_point deadline) override;
  int collective_slots() const override;  // C above (0 without collectives)
  void cancel() override;
  bool cancelled() const override;
  void reset() override;

  // The job-wide time origin that send times are carried relative to (default: construction).
  void set_epoch(Clock::time_point t0);
  int iteration_window() const;
  int mpi_tag(const MessageTag& tag) const;
  // Messages in the self-send mailbox not yet received.
  size_t self_buffered() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::exec
