// Discrete-event pipeline simulator.
//
// Semantics (DESIGN.md "Simulation semantics"): each device runs its op list in order; an op
// starts when its device is free and its inputs have arrived: F(s,j) needs the activation of
// F(s-1,j); B/BW(s,j) needs F(s,j) and the gradient of B/BW(s+1,j); W(s,j) needs B(s,j).
// Outputs cross to the device of the neighbouring stage through the Network (network.h;
// nothing to send when both stages share a device). Time is integer nanoseconds; events at
// equal times fire in insertion order; runs are deterministic.
//
// Op durations for virtual stage s (per micro-batch): F = forward_ns[s];
// B = backward_input_ns[s] (+ forward_ns[s] with recompute); W = backward_weight_ns[s];
// BW = B + W (+ forward_ns[s] with recompute); allreduce = allreduce_ns[s]; step =
// step_ns[device].
//
// Memory per device (the sum over its stages): weights_optimizer_bytes (weights, gradients,
// optimizer state) always; 2bw adds one parameter_bytes copy (the second weight buffer);
// pipedream-async adds parameter_bytes for every in-flight micro-batch beyond the first
// (stashed versions). Per in-flight micro-batch (F start to the end of its last backward op,
// BW or W): stash_bytes_per_micro_batch, or with recompute input_bytes_per_micro_batch plus
// stash_bytes_per_micro_batch from the start of its B/BW (the re-forward) to that end.
// working_bytes while any op of the stage runs. weight_pending_bytes_per_micro_batch from the
// start of a split B to the end of its W (what B keeps for W: output gradients, saved partial
// results; no effect on BW). Frees at a time are applied before allocations
// that start at the same time on the same device.
//
// Iterations: synchronous schedules run their lists K times back to back (each device's
// iteration k+1 follows its step of iteration k). Asynchronous schedules (pipedream-async,
// 2bw) run the unbounded stream: on each device, the last n ops of iteration k (n = its
// number of leading forwards, at most its number of trailing non-forward ops) are
// interleaved one-for-one with the leading forwards of iteration k+1, backward first; for
// 1f1b-shaped lists this is exactly the 1F1B stream of K*m micro-batches. An allreduce op
// travels with the op before it (the backward it follows).
//
// Replicated stages (Schedule::stage_replicas; planner/schedule_replicas.h): each replica is a
// device with its own op list; micro-batch g of stage s is on replica g mod r_s (g counts
// across iterations for asynchronous schedules). A transfer goes from the replica that produced
// it to the replica of the next (or previous) stage that owns the micro-batch, over the link
// joining those two devices. Every replica holds the stage's weights (and the 2bw buffer);
// stashed versions and in-flight micro-batches are counted per replica.
// The weight-gradient all-reduce of a replicated stage holds the directed links of its ring
// (replica i -> replica i+1 mod r, links the transfers use too) and the replicas taking part
// for allreduce_ns[s] (the ring time of planner::ring_allreduce over the level joining the
// replicas, sim/plan_costs.h); it starts once they have reached it and every ring link is
// free (all-reduces and transfers on a link queue in request order).
// - synchronous schedules: the replicas' allreduce ops of an iteration (micro_batch -1, just
//   before the step, i.e. at the flush) form one collective: it starts when the last replica
//   reaches it; replicas waiting for it are idle, not busy.
// - asynchronous schedules (PipeDream): each replica all-reduces its gradient after each of
//   its backwards (allreduce(s, j) after BW(s, j)). It is overlapped with the rest of the
//   pipeline (the other replicas and stages keep running; it does not wait for the other
//   replicas) but not with the replica's own compute: PipeDream's replicas run
//   DistributedDataParallel, whose backward returns once the all-reduce is done, and its
//   optimizer charges a replica (C + AR) / r per mini-batch. A barrier among replicas taking
//   micro-batches in turn would hold each one until the last of its round had finished,
//   which neither PipeDream's cost model nor its round-robin steady state has.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "planner/schedule.h"
#include "sim/network.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace pw::sim {

struct StageCosts {
  // Per virtual stage, for one micro-batch (ns).
  std::vector<int64_t> forward_ns, backward_input_ns, backward_weight_ns;
  std::vector<int64_t> allreduce_ns;  // per allreduce op of the stage; empty = 0
  std::vector<int64_t> step_ns;       // per device; empty = 0
  // Per device; empty = 0. Synchronous schedules: the device is busy for data_ns[d] at the start
  // of every iteration, before its first op: the next mini-batch, drawn by the last stage's
  // worker, idle while the pipeline fills, when the workers own every core
  // (exec/runtime/run_pipeline.h). No trace event; counted in the device's busy time.
  // Ignored by asynchronous schedules.
  std::vector<int64_t> data_ns;
  // Per virtual stage, bytes sent per micro-batch: activation_bytes[s] from s to s+1,
  // gradient_bytes[s] from s to s-1 (activation_bytes.back() and gradient_bytes[0] unused).
  std::vector<int64_t> activation_bytes, gradient_bytes;
  // Memory model, per virtual stage (bytes); empty vectors mean 0.
  std::vector<int64_t> weights_optimizer_bytes, parameter_bytes;
  std::vector<int64_t> stash_bytes_per_micro_batch, input_bytes_per_micro_batch, working_bytes;
  std::vector<int64_t> weight_pending_bytes_per_micro_batch;
  std::vector<uint8_t> recompute;  // per virtual stage; empty = none
  int64_t samples_per_micro_batch = 1;

  int num_stages() const { return static_cast<int>(forward_ns.size()); }
  // Equal stages: F, B, W times and zeros elsewhere.
  static StageCosts uniform(int num_stages, int64_t forward_ns, int64_t backward_input_ns, int64_t backward_weight_ns);
  // Throws InputError if sizes do not match num_stages (or devices) or a value is negative.
  void validate(int num_stages, int num_devices) const;
};

struct SimOptions {
  int iterations = 1;
  bool record_trace = false;  // events and memory samples
  bool validate = true;       // run planner::validate_schedule first
  // Optional: the duration of each op instead of the costs' (trace replay, sim/replay.h):
  // (device, op as in the device's list, iteration, the costs' duration) -> ns >= 0.
  std::function<int64_t(int, const planner::Op&, int, int64_t)> op_duration;
  // Optional: the latency of each transfer between devices instead of the network's (trace
  // replay): (sending op, its iteration, the network's latency) -> ns >= 0. The link's
  // occupancy (bandwidth) is kept; only the latency after it is replaced.
  std::function<int64_t(const planner::Op&, int, int64_t)> transfer_latency;
  // Also simulate the schedule with equalised costs for Report::schedule_bubble (report.h);
  // off, it stays 0. Costs one more simulation without trace.
  bool schedule_bubble = false;
};

struct SimResult {
  Report report;
  Trace trace;  // empty unless record_trace
};

// Throws InputError for an invalid schedule, mismatched costs or iterations < 1.
SimResult simulate(const planner::Schedule& schedule, const StageCosts& costs, const Network& network,
                   const SimOptions& options = {});

// The per-device op lists of K iterations of an asynchronous schedule, with micro-batch
// indices global (k*m + j); see the header comment. Exposed for tests.
std::vector<std::vector<planner::Op>> unroll_async(const planner::Schedule& schedule, int iterations);

}  // namespace pw::sim
