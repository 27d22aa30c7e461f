// Trace replay (DESIGN.md, "Fidelity"): the per-op durations of a measured run, replayed
// through the same schedule and simulator, to split the error of a prediction in two.
//
// Given the run's schedule and a measured Trace of it (exec/, one event per executed op),
// replay() simulates each iteration k of [first, first + K) of the run on its own (the
// runtime starts every iteration on all workers at once) with every compute op (F, B, W, BW,
// step) lasting exactly as long as it did in iteration k of the measurement, and every
// transfer between devices taking as long as it did: from the sender's hand-off to the
// receiver taking the message (a receiver woken late, e.g. because another thread held its
// core, shows there). In a measured trace (source "measured": the runtime records the sending
// op's end after its hand-off, and ends a transfer when the receiver took the message) the
// latency counts from the latest of the hand-off, the sending op's end and the end of the
// receiver's last compute op before the take: the hand-off's own work is in the sending op,
// a message that waited while the receiver was busy costs the transfer nothing, and the wait
// is the simulation's own (a receiver delayed by something else is scheduling error, not
// transfer cost). A simulated trace's transfers end on arrival. A transfer the trace lacks (traces written without
// them) takes the hand-off latency given to replay(), or nothing. Iteration times are medians over the K iterations
// (one slow iteration, a hiccup of the machine, does not move them) of:
// - measured: the span of iteration k's ops in the trace (first start to last end);
// - replayed: the makespan of the replay of iteration k;
// - predicted: the makespan of one iteration simulated with the predicted StageCosts.
// scheduling error = replayed - measured (what the simulator's model of the schedule misses:
// hand-offs, waits, runtime work between ops); cost-model error = predicted - replayed (the
// op durations the cost model got wrong), itemized per (stage, op kind) as the difference of
// the mean durations times the number of such ops per iteration (step: per device; transfers:
// one "send" row per sending stage, predicted = the hand-off latency).
// Replaying a trace the simulator itself wrote gives measured == replayed exactly.
//
// Throws InputError when the trace lacks an op the schedule runs in those iterations, or
// the iterations are out of range. Pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/json_util.h"
#include "planner/schedule.h"
#include "sim/engine.h"
#include "sim/run_trace.h"  // RunTrace: what simulate --replay reads
#include "sim/trace.h"

namespace pw::sim {

struct OpKindError {
  int stage = 0;  // virtual stage (step: the device)
  planner::OpKind kind = planner::OpKind::F;
  int count = 0;            // ops per iteration
  double predicted_ns = 0;  // per op
  double measured_ns = 0;   // per op (mean over the replayed iterations)
  double error_ns() const { return (predicted_ns - measured_ns) * count; }  // per iteration
};

struct ReplayResult {
  int first_iteration = 0, iterations = 0;
  double measured_ns = 0, replayed_ns = 0, predicted_ns = 0;  // per iteration
  double scheduling_error_ns() const { return replayed_ns - measured_ns; }
  double cost_model_error_ns() const { return predicted_ns - replayed_ns; }
  std::vector<OpKindError> ops;  // stage-major, F B W BW send step
  Trace replayed;                // the replay's trace (iterations renumbered from 0)
};

// `first` < 0: the last `iterations` iterations of the trace; iterations <= 0: all from first.
// `handoff_ns` > 0: every transfer between distinct devices costs that latency in the
// predicted simulation (sim::Network::fixed; the runtime's measured hand-off,
// exec/profile/handoff.h) and in the replay where the trace lacks the transfer; 0: free there.
ReplayResult replay(const planner::Schedule& schedule, const Trace& measured, const StageCosts& predicted,
                    int first = -1, int iterations = 0, int64_t handoff_ns = 0);

// What `simulate --replay F` computes from a run trace: its schedule rebuilt from the kind,
// stages, chunks and micro-batches it records, and its kept iterations replayed from
// replay_first_iteration on, with its hand-off latency. InputError prefixed with `where` (the
// file) for a trace without "predicted" (recorded without --compare), stages that are not a
// multiple of chunks, a schedule the counts do not make, or a trace the replay refuses.
ReplayResult replay_run_trace(const RunTrace& rt, const std::string& where);

// A readable table: the three iteration times, the split, and the per-(stage, kind) rows.
std::string format_replay(const ReplayResult& r);

}  // namespace pw::sim
