// Replicated schedules: pipeline stages with several data-parallel replicas (PipeDream).
//
// Devices are numbered stage by stage: stage s's replicas are devices R_s .. R_s + r_s - 1,
// R_s = r_0 + ... + r_{s-1} (with every r_s = 1, device s runs stage s as in make_schedule).
// Replica i of stage s owns the micro-batches j with j mod r_s == i (round-robin, PipeDream's
// 1F1B-RR); its op list is the kind's order restricted to them (n = how many it owns):
// - gpipe: F ascending, then BW descending;
// - 1f1b, pipedream-async, 2bw: w = min(ceil(D_s / r_s) - 1, n) warm-up F, then (F, BW) pairs,
//   then the remaining BW, where D_s = the devices of stages s..S-1 (PipeDream keeps
//   ceil(D_s / r_s) micro-batches in flight per replica); with every r_s = 1 this is
//   make_schedule's 1f1b order (w = p - s - 1).
// Weight-gradient all-reduce, for the stages with allreduce[s] set and r_s > 1:
// - synchronous kinds: one allreduce(s, -1) per replica just before its step (at the flush);
// - asynchronous kinds: allreduce(s, j) right after every BW(s, j) of the replica (PipeDream:
//   each replica all-reduces its gradient after its backward).
// How the simulator runs these collectives is stated in sim/engine.h.
// With every r_s = 1 the result is make_schedule(kind, S, m) (stage_replicas left empty).
// Throws InputError for an empty or non-positive replica list, m < 1, a kind other than
// gpipe, 1f1b, pipedream-async, 2bw when some r_s > 1, an asynchronous kind with m not a
// multiple of every r_s, or allreduce of another size than the replica list.
#pragma once

#include <vector>

#include "planner/schedule.h"

namespace pw::planner {

Schedule make_replicated_schedule(ScheduleKind kind, const std::vector<int>& replicas, int num_micro_batches,
                                  const std::vector<bool>& allreduce = {});

// Micro-batches per iteration for an asynchronous replicated schedule of a plan with m: the
// smallest multiple of m that every replica count divides (the round-robin period) and that
// gives every replica more micro-batches than its warm-up (at least r_s ceil(D_s / r_s)), so
// that unrolling iterations (sim::unroll_async) yields the steady 1F1B stream of each replica.
// Throws InputError past 2^20.
int round_robin_micro_batches(int m, const std::vector<int>& replicas);

}  // namespace pw::planner
