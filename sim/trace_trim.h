// Long runs: a trace that stays small (`run --trace F --trace-keep K`, `--trace-all`).
//
// A measured trace grows by every op of every iteration (~5 kB an iteration for small gpt on
// 2 stages: 25 MB of Chrome trace JSON for 5,000 steps). trim_trace keeps the last `keep`
// iterations (by iteration number) in full — every event, compute and transfer — and one
// summary per iteration for all of them: the extent of its compute events (first start, last
// end), as sim/replay.h measures an iteration. Memory samples are kept from the first kept
// event on, plus the last earlier sample of each device (the level the kept part starts from).
// Pure, deterministic; events keep their order.
//
// chrome_trace_json(TrimmedTrace): sim/trace_io.h's Chrome trace of the kept events, plus
// process 2 "iterations" with one complete ("X") event per summary on track 0, named
// "iteration k", args {"iteration", "start_ns", "end_ns", "duration_ns"}; otherData gains
// "iterations" (summaries) and "kept_iterations" (iterations in full).
#pragma once

#include <cstdint>
#include <vector>

#include "models/json_util.h"
#include "sim/trace.h"

namespace pw::sim {

struct IterationSummary {
  int iteration = 0;
  int64_t start_ns = 0;  // first compute event's start
  int64_t end_ns = 0;    // last compute event's end
};

// One summary per iteration that has a compute event, in ascending iteration order.
std::vector<IterationSummary> iteration_summaries(const Trace& t);

struct TrimmedTrace {
  Trace trace;                               // the kept iterations' events and their memory samples
  std::vector<IterationSummary> iterations;  // every iteration of the input
  int kept_iterations = 0;                   // iterations of `trace` (<= keep)
};

// keep >= 1 (PW_CHECK; the CLI refuses others). keep >= the iteration count keeps everything.
TrimmedTrace trim_trace(const Trace& t, int keep);

Json chrome_trace_json(const TrimmedTrace& t);

}  // namespace pw::sim
