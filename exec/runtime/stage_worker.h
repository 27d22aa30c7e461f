// StageWorker: executes one device's op list of a Schedule for one iteration, on the calling
// thread (the runtime gives each worker its own pinned thread).
//
// Per op: F(s, j) receives the payload of s-1 (unless s == 0), calls compute.forward, sends
// the result to the device of s+1 (unless s is last). B / BW(s, j) receive the gradient
// payload of s+1 (unless s is last) and send theirs to s-1 (unless s == 0). W and step call
// the compute. Sends never block (pending sends progress while the worker waits for its next
// input, and are flushed before the iteration ends).
// Asynchronous schedules (no step ops) get one compute.step(s) after every backward of s
// that completes the micro-batch (BW, or W), i.e. PipeDream's per-micro-batch update.
//
// Replicated stages (Schedule::stage_replicas): F(s, j)'s output goes to the replica of s+1
// that owns j, B / BW(s, j)'s gradient to the replica of s-1 that owns j (Schedule::device_of),
// and receives name that device as source. allreduce(s, j) runs a RingAllreduce
// (exec/runtime/replica_allreduce.h) over compute.weight_gradients(s) among the stage's
// replicas: allreduce(s, -1) (synchronous, at the flush) sums, round 0; allreduce(s, j >= 0)
// (asynchronous, after BW(s, j)) averages, round j / r_s, and the step that follows the
// backward of j is taken after the all-reduce instead (PipeDream: replicas average their
// gradients, then each applies the same update).
// Overlap (WorkerConfig::overlap_allreduce, the default): the gradients are all-reduced in
// buckets (exec/runtime/grad_buckets.h, WorkerConfig::bucket_bytes, in reverse layer order),
// each bucket's ring (replica_allreduce.h, over a sub-range of the flat vector that keeps the
// whole vector's chunk boundaries, so the sums are bit-identical to one ring) started as soon
// as its gradients are final: during the backward that completes the stage's gradients (the
// last BW or W of the stage before allreduce(s, j), found in the op list), through
// OpContext::grads_done, which the compute calls between layers; the worker then also
// progresses the rings in flight (no waiting, no compute call). The allreduce op starts the
// buckets still unstarted (all of them for a compute that never calls grads_done). The rings
// progress whenever the worker waits (for an input, for its sends) or finishes an op, and are
// completed before the next op OF THE SAME STAGE (F / B / BW / W first receive their input,
// then wait), before a step, and at the iteration's end. The deferred asynchronous step runs
// once all of an all-reduce's rings are seen complete. The numbers are those of the blocking
// order (backward, all-reduce, step, next op); only the waiting overlaps.
// Tags: bucket b of round k uses round k * buckets + b (the buckets per stage are capped so
// that every tag fits Transport::collective_slots()).
// Blocking mode (overlap_allreduce = false): one ring over the whole vector, started and
// completed at the allreduce op.
// The allreduce trace event spans from the allreduce op (the buckets started in the backward
// have been running since) to the completion of its last ring (plus the deferred asynchronous
// step), recorded when that completes; it ends before the next op of the stage starts.
//
// Timing: an op's event spans from the moment its input is available to the moment its
// output has been handed to the transport; waiting is not part of the op. Every received
// cross-device payload is also recorded as a transfer event (send call -> receive), and after
// every op the device's memory (sum of compute.memory_bytes over its stages) is sampled.
// Times are nanoseconds since `t0`.
//
// Devices (WorkerConfig::lane, exec/device_streams.h): a worker whose lane is an accelerator
// queue (a CUDA stream slot) queues its ops there and does not wait for them. Each payload it
// sends carries a fence recorded on its queue after the op, and each payload it receives is
// taken over on its own queue after waiting for the sender's fence (the buffers change owner
// on one GPU, are peer-copied between GPUs). With a clock (WorkerConfig::clock) op times come
// from marks in the lane's queue around each op, read when the iteration's ops are all queued
// (the worker then waits for its queue): an op's event spans from the queue reaching the op to
// the queue finishing it; a received payload's transfer event is a zero-length mark where the
// queue has waited for it; memory samples take the op's end mark. A received payload whose
// tensors are on the host (an MPI peer's, staged through the host by its transport,
// exec/transport/transport_mpi.h) is uploaded onto the lane first (the upload waits for the
// lane's queue). Replicated stages on such lanes: the all-reduce stages the gradients through
// the host (exec/runtime/replica_allreduce.h), downloading each bucket's tensors when its ring
// starts and uploading them when it completes, so the deferred step and the next op of the
// stage, queued after, read the reduced gradients.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/device_streams.h"
#include "exec/runtime/grad_buckets.h"
#include "exec/runtime/replica_allreduce.h"
#include "exec/runtime/stage_compute.h"
#include "exec/transport/transport.h"
#include "planner/schedule.h"
#include "sim/trace.h"

namespace pw::exec {

// Thrown when a worker waits past the iteration deadline (a deadlock or a stuck peer).
class PipelineStall : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct WorkerConfig {
  int device = 0;
  const planner::Schedule* schedule = nullptr;  // not owned; outlives the worker
  StageCompute* compute = nullptr;
  Transport* transport = nullptr;
  bool vertical_sync = false;      // tag payloads with stage 0's weight version
  bool overlap_allreduce = true;   // replicated stages: bucketed, overlapped ring all-reduce (see above)
  int64_t bucket_bytes = 4 << 20;  // overlapped all-reduce: bucket size (<= 0: one bucket)
  bool record_trace = true;
  Transport::Clock::time_point t0;
  Device lane = Device::cpu();         // where the worker's ops are queued (see above)
  std::shared_ptr<StreamClock> clock;  // op times from the lane's queue; null: host time at each call
};

class StageWorker {
 public:
  explicit StageWorker(WorkerConfig cfg);
  ~StageWorker();

  // Throws PipelineStall past `deadline`, TransportCancelled when the run was cancelled, and
  // whatever the compute throws.
  void run_iteration(int iteration, Transport::Clock::time_point deadline);

  int device() const { return cfg_.device; }
  // Where the worker is (for stall reports): "at F(1,3) waiting for it 0 stage 0 mb 3 fwd from
  // device 0", "done". Read only after run_iteration returned or threw.
  const std::string& status() const { return status_; }
  // Label of the op being run or last run ("B(1,3)"), "" before the first.
  const std::string& current_op() const { return current_op_; }

  std::vector<sim::TraceEvent> events;  // appended per iteration; the runtime drains them
  std::vector<sim::MemorySample> memory;

 private:
  void run_ops(int iteration, Transport::Clock::time_point deadline);
  void wait_request(Request& req, const MessageTag& tag, int peer, Transport::Clock::time_point deadline);
  std::vector<Tensor> receive(int iteration, int src_stage, Direction dir, int micro_batch,
                              Transport::Clock::time_point deadline, int64_t* version);
  void send(int iteration, int stage, Direction dir, int micro_batch, std::vector<Tensor> payload, int64_t version);
  void progress_sends();
  void flush_sends(Transport::Clock::time_point deadline);
  // All-reduces in flight. progress_rings: test every ring without blocking; with `finish`,
  // complete the all-reduces whose rings are all done (deferred step, trace event).
  // complete_rings: wait until no started ring of `stage` (-1: of any stage) is unfinished.
  struct Reduction;
  Reduction& reduction_for(const planner::Op& allreduce_op, int iteration);
  void start_buckets(Reduction& red, size_t final_from);
  void progress_rings(bool finish = true);
  void complete_rings(int stage, Transport::Clock::time_point deadline);
  void finish(Reduction& red);
  int64_t now_ns() const;
  // The time of this point: host ns, or with a clock the number of a mark resolved at the end.
  int64_t op_time();
  void resolve_marks(size_t first_event, size_t first_sample);
  void sample_memory(int64_t t);
  void record(const planner::Op& op, int iteration, int64_t start_ns);  // trace event + memory sample

  WorkerConfig cfg_;
  bool async_steps_;  // step after each backward: the schedule's kind is asynchronous
  std::vector<int> my_stages_;
  std::vector<std::unique_ptr<Request>> pending_;
  std::vector<int> writer_of_;  // per op: index of the allreduce op whose gradients it completes, or -1
  std::vector<std::unique_ptr<Reduction>> reductions_;
  std::string status_;
  std::string current_op_;
};

}  // namespace pw::exec
