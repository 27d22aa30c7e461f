// replica_allreduce: the weight-gradient all-reduce among the replicas of one pipeline stage,
// written against the Transport interface only, so the same code runs on the in-process
// transport (replicas as threads) and on MPI (one rank per replica).
//
// Algorithm: a ring (reduce-scatter, then all-gather), the collective the simulator prices
// (planner::ring_allreduce: each replica sends and receives 2(r-1)/r of the bytes, in 2(r-1)
// steps). The r replicas (in the order of `replicas`; position p) view their gradient tensors
// as one flat vector of N floats cut into r contiguous chunks, chunk c = [N c / r, N (c+1) / r).
// Reduce-scatter step t = 0..r-2: position p sends chunk (p - t) mod r to position p+1 and adds
// the chunk (p - t - 1) mod r it receives from p-1 into its own; afterwards p holds the full sum
// of chunk (p+1) mod r (divided by r when `average`). All-gather step t = 0..r-2: p sends chunk
// (p + 1 - t) mod r on and copies the chunk (p - t) mod r it receives over its own. Every chunk
// ends as one replica's bits copied to the others, so all replicas hold bit-identical gradients
// and the same optimizer step keeps their weights bit-identical. The sum of a chunk runs along
// the ring (chunk c: ((g_c + g_{c+1}) + ...) by position); with r = 2 that is g_0 + g_1 in
// every element, the same bits as a sum at replica 0.
//
// Tags: {iteration, stage, round * (r-1) + t, reduce} for reduce-scatter step t and the same
// with broadcast for all-gather step t. `round` numbers the all-reduces of one stage within an
// iteration (0 for the synchronous flush; PipeDream's per-backward all-reduce: the k-th backward
// of every replica is round k; a bucketed all-reduce gives each bucket a round of its own, see
// exec/runtime/grad_buckets.h), so (source, tag) is unique per message and rounds may overlap.
//
// Buckets (a sub-range [flat_begin, flat_end) of the flat vector): the ring then moves only the
// elements of the range, but keeps the WHOLE vector's chunk boundaries: its chunk c is
// [N c / r, N (c+1) / r) intersected with the range (possibly empty: an empty message is still
// sent, so every replica runs the same 2(r-1) steps). Every element is therefore summed by the
// same replicas in the same order as by one ring over the whole vector, and a set of bucket rings
// that covers the vector leaves bit-identical results to that one ring, for any r.
//
// RingAllreduce is the non-blocking form: the constructor sends the first chunk; progress()
// takes what has arrived, adds or copies it, sends the next chunk, and returns true once this
// replica's gradients hold the result AND its own sends have completed. It never waits. Owning
// the sends matters under MPI: a large message moves only while its sender calls into MPI, so a
// replica that went on computing with its last chunk still in flight would hold its peer up for
// that whole op. Until done() the caller must not touch the gradients (the ring reads and writes
// them in place). replica_allreduce() is the blocking form: it constructs the ring and hands `wait` a
// request whose test() progresses the whole ring (its pending sends too) and completes when the
// ring is done, with the tag and peer the ring needs next (for the wait's messages). A wait
// therefore only has to test the request it is given, as a point-to-point wait does.
//
// Gradients on a device (a pipeline on GPUs, exec/device_ops.h): the ring runs on host copies.
// The constructor downloads each device tensor of its range (copy_to_host waits for the
// tensor's stream, where the backward that produced it queued its work, so the values are
// final), the steps add and copy on the host exactly as for host gradients, and the step that
// completes the ring uploads the copies back (copy_from_host, on the tensor's stream, so work
// queued there later reads the result) before done() turns true. Why host staging: the chunks
// travel as host tensors anyway (the MPI transport sends host buffers; NCCL is not used, it
// refuses two ranks on one GPU), the sums keep the host path's order and bits, and every
// replica still ends with one replica's bits. The cost is one synchronizing download and upload
// per gradient tensor per all-reduce. A device tensor must lie wholly inside or outside the
// range (grad_buckets' buckets are whole tensors; PW_CHECK). Host gradients are used in place,
// as before (no copies).
//
// Requirements: every replica calls with the same iteration, stage, round, number of gradient
// tensors and shapes (a mismatch of chunk sizes is caught: PW_CHECK), and `device` is one of
// `replicas`. One replica is a no-op (done at construction).
// Thread-safety: as the Transport (one thread per endpoint); an object is used by one thread.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "exec/transport/transport.h"

namespace pw::exec {

using RequestWait = std::function<void(Request& req, const MessageTag& tag, int peer)>;

class RingAllreduce {
 public:
  // flat_end < 0: the whole vector.
  RingAllreduce(Transport& transport, int device, std::vector<int> replicas, int iteration, int stage, int round,
                std::vector<Tensor*> grads, bool average, int64_t flat_begin = 0, int64_t flat_end = -1);

  bool progress();
  bool done() const { return step_ >= steps_ && sends_.empty(); }
  // The request the ring needs next (a receive, or at the end one of its sends), its tag and
  // peer device (only while !done()).
  Request& waiting();
  MessageTag waiting_tag() const;
  int waiting_peer() const;

 private:
  MessageTag tag_of(int step) const;
  int send_chunk(int step) const;
  int recv_chunk(int step) const;
  void start_step();
  void apply(const Message& m);
  int64_t chunk_begin(int chunk) const;  // the bucket's part of whole-vector chunk `chunk`
  int64_t chunk_end(int chunk) const;
  template <typename F>
  void for_chunk(int chunk, F&& f);  // f(float* grad_span, int64_t n, int64_t offset_in_chunk)

  Transport& tr_;
  int device_;
  int iteration_, stage_, round_;
  int r_ = 1, pos_ = 0, prev_ = 0, next_ = 0;
  // Download the device tensors of the range into staged_ and point grads_ at the copies.
  void stage_to_host();
  void upload_staged();

  std::vector<Tensor*> grads_;        // host tensors (device ones replaced by their staged copies)
  std::vector<Tensor> staged_;        // host copies of device gradients, in order
  std::vector<Tensor*> staged_from_;  // the device tensor of each staged_ entry
  bool average_;
  int64_t total_ = 0;
  int64_t flat_begin_ = 0, flat_end_ = 0;  // the bucket
  int step_ = 0, steps_ = 0;
  std::unique_ptr<Request> recv_;
  MessageTag recv_tag_;
  std::vector<std::pair<std::unique_ptr<Request>, MessageTag>> sends_;  // not complete yet
};

void replica_allreduce(Transport& transport, int device, const std::vector<int>& replica_devices, int iteration,
                       int stage, int round, const std::vector<Tensor*>& grads, bool average, const RequestWait& wait,
                       int64_t flat_begin = 0, int64_t flat_end = -1);

}  // namespace pw::exec
