// Schedule: the op IR that both the simulator (sim/) and the executor (exec/) interpret.
//
// For each device, an ordered list of ops. Compute ops name a *virtual stage* (a pipeline
// stage, or a model chunk for interleaved schedules) and a micro-batch. Communication between
// stages is implicit: the output of F(s, j) goes to the device of stage s+1, the input
// gradient of B(s, j) (or BW) to the device of stage s-1, at the cost of the link joining the
// two devices. The explicit kinds send/recv/allreduce/step exist for schedules that need them
// (allreduce for replicated stages, step = one optimizer step of the device's stages).
// An allreduce op of a replicated stage is a collective of its replicas (sim/engine.h): with
// micro_batch -1 one per replica and iteration (synchronous: at the flush, before step), with
// micro_batch j >= 0 the all-reduce that follows the replica's backward of j (asynchronous).
//
// Dependencies (DESIGN.md, "Simulation semantics"): F(s,j) needs F(s-1,j); B(s,j) / BW(s,j)
// needs B(s+1,j) (or BW) and its own F(s,j); W(s,j) needs B(s,j); step needs every op of its
// device before it. Ops of one device run in list order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/json_util.h"

namespace pw::planner {

enum class ScheduleKind {
  gpipe,             // all F, then all BW (reverse micro-batch order); flush
  one_f_one_b,       // "1f1b" (PipeDream-Flush)
  interleaved_1f1b,  // Megatron-LM interleaved, v chunks per device
  zb_h1,             // Zero Bubble H1 (B and W split)
  zb_h2,             // Zero Bubble H2
  pipedream_async,   // PipeDream 1F1B without flush, weight stashing
  two_bw,            // PipeDream-2BW (double-buffered weights)
};

std::string_view to_string(ScheduleKind kind);  // "gpipe", "1f1b", "interleaved-1f1b", "zb-h1",
                                                // "zb-h2", "pipedream-async", "2bw"
// Throws InputError("<where>: unknown schedule \"x\" (expected one of ...)").
ScheduleKind parse_schedule_kind(std::string_view s, const std::string& where);
// Synchronous schedules flush and apply one optimizer step per mini-batch.
bool is_synchronous(ScheduleKind kind);
// True for schedules that split backward into B and W ops.
bool splits_backward(ScheduleKind kind);

enum class OpKind { F, B, W, BW, send, recv, allreduce, step };
std::string_view to_string(OpKind kind);  // "F", "B", "W", "BW", "send", "recv", "allreduce", "step"
OpKind parse_op_kind(std::string_view s, const std::string& where);

struct Op {
  OpKind kind = OpKind::F;
  int stage = 0;        // virtual stage; -1 for step
  int micro_batch = 0;  // -1 where not applicable (step, allreduce)
  int peer = -1;        // other device for explicit send/recv; -1 otherwise
  int64_t bytes = 0;    // payload of explicit communication ops
  bool operator==(const Op&) const = default;
};

// A compute op (F, B, W, BW) of `stage` on micro-batch `mb`.
inline Op compute_op(OpKind kind, int stage, int mb) { return Op{kind, stage, mb, -1, 0}; }

struct Schedule {
  ScheduleKind kind = ScheduleKind::gpipe;
  int num_devices = 1;
  int num_stages = 1;  // virtual stages (= devices * chunks for interleaved)
  int num_micro_batches = 1;
  std::vector<int> stage_device;            // virtual stage -> device (replica 0's device when replicated)
  std::vector<std::vector<Op>> device_ops;  // per device, in execution order
  // Replicated stages (data parallelism inside a stage, as PipeDream): stage_replicas[s] lists
  // the devices of stage s's replicas, replica 0 first (stage_replicas[s][0] == stage_device[s]);
  // micro-batch j of stage s runs on replica j mod r_s (round-robin; for asynchronous schedules
  // j counts across iterations, so num_micro_batches must be a multiple of every r_s). Empty:
  // one replica per stage, on stage_device (every schedule make_schedule builds).
  std::vector<std::vector<int>> stage_replicas;

  int chunks() const { return num_stages / num_devices; }
  size_t num_ops() const;
  int replicas(int stage) const { return stage_replicas.empty() ? 1 : static_cast<int>(stage_replicas[stage].size()); }
  // The device running micro-batch j (>= 0; < 0: replica 0) of `stage`.
  int device_of(int stage, int micro_batch) const {
    if (stage_replicas.empty()) return stage_device[stage];
    const auto& r = stage_replicas[stage];
    return micro_batch < 0 ? r[0] : r[static_cast<size_t>(micro_batch) % r.size()];
  }
};

void to_json(Json& j, const Schedule& s);
Schedule schedule_from_json(const Json& j);  // {"format": "pipewright.schedule/1", ...}

}  // namespace pw::planner
