// The file `run --run-trace F` writes and `simulate --replay F` reads (sim/replay.h):
// {"format": "pipewright.run-trace/1", "schedule": KIND, "stages", "chunks", "micro_batches",
//  "warmup_iterations", "predicted": {"forward_ns": [...], "backward_input_ns", "backward_weight_ns",
//  "step_ns", "data_ns" (optional, per device)} (optional), "handoff_ns" (optional, default 0),
//  "iterations": [{"iteration", "start_ns", "end_ns"}, ...] (optional),
//  "trace": {pipewright.trace/1}}.
//
// Long runs: like `run --trace`, a run trace keeps the last K iterations'
// ops in full (keep_last_iterations, sim/trace_trim.h) and, in "iterations", one summary per
// iteration of the whole run (the extent of its compute ops, ascending iteration numbers).
// Replay reads only the kept iterations: replay_first_iteration is the first one it may use.
// A file without "iterations" (written before they existed) keeps every iteration.
#pragma once

#include <cstdint>
#include <vector>

#include "models/json_util.h"
#include "planner/schedule.h"
#include "sim/engine.h"
#include "sim/trace.h"
#include "sim/trace_trim.h"

namespace pw::sim {

struct RunTrace {
  planner::ScheduleKind schedule = planner::ScheduleKind::one_f_one_b;
  int stages = 1, chunks = 1, micro_batches = 1, warmup_iterations = 0;
  bool has_predicted = false;
  StageCosts predicted;
  int64_t handoff_ns = 0;                    // latency charged per transfer between devices (replay's handoff_ns)
  std::vector<IterationSummary> iterations;  // every iteration of the run; may be empty
  Trace trace;                               // the kept iterations' events
};

// Sets r.iterations to the summaries of r.trace and keeps the last `keep` (>= 1) iterations
// of r.trace in full (trim_trace); keep >= the iteration count keeps everything.
void keep_last_iterations(RunTrace& r, int keep);

// The first iteration replay may use: the first after the warm-up that the file holds in full.
int replay_first_iteration(const RunTrace& r);

Json run_trace_to_json(const RunTrace& r);
// Throws InputError naming the JSON path (e.g. "/iterations/3/end_ns: ...").
RunTrace run_trace_from_json(const Json& j);

}  // namespace pw::sim
