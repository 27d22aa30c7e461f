// make_plan: the planner's entry point (used by `pipewright plan` and the what-if sweeps).
//
// Objectives:
// - "sync": synchronous pipeline (gpipe / 1f1b / zb-h1), one device per stage, minimizing the
//   fill-drain iteration time of planner/sync_dp.h over the number of stages, per-stage
//   re-materialization and the micro-batch count (divisors of the batch when "auto"; a given
//   count must divide the batch, so that every micro-batch has the same size and the plan's
//   batch is the user's: InputError naming the counts that do).
// - "async": replicated asynchronous pipeline (PipeDream 1F1B, weight stashing) under our
//   corrected cost model (planner/replicated_dp.h), cuts at prefixes of the layer order, levels
//   from the cluster solved bottom-up.
// - "pipedream": PipeDream's own optimizer's cost model exactly, on its antichain states; when
//   those exceed 5000 (raw Inception-v3, NASNets) the prefixes of the topological order are used
//   instead (plan.cut_family says which). Times per mini-batch are the profile's (PipeDream
//   profiles are per mini-batch); predicted.bottleneck_time_s = "Time per stage in pipeline".
// The profile holds costs for profile.micro_batch samples; times and activation bytes scale
// linearly in samples, parameters are constant. A PipeDream profile whose batch cannot be
// inferred (models::infer_pipedream_batch == 0: GNMT; the importer then says micro_batch 1) is
// taken to hold the whole mini-batch of --batch samples (req.batch), or of 64 samples when
// --batch is not given (the batch size of PipeDream's GNMT profiling command), so that sync
// planning can split it into micro-batches.
//
// Fidelity: a profile with measured points (models/profile_points.h) is searched jointly over
// threads per stage k (its measured thread counts, plus all of the cluster's devices — one stage
// on all cores — for a measured profile) and micro-batch count m, each (k, m) costed at its own
// point (profile_at; the cluster seen with k devices merged per stage); the plan records k
// (threads_per_stage, stage devices d*k) and whether the winner's costs were extrapolated.
// Each stage's optimizer step (the profile's step_ns) is added to the predicted iteration.
// That joint search reports every (k, m) it priced in PlanOutcome::candidates (best partition
// each, ordered by predicted time), and PlanRequest::threads_per_stage > 0 restricts it to one
// k, so a caller can make the plan of any candidate (`plan --measure` trial-runs near ties).
//
// Infeasible (nothing fits the per-device memory) is a normal outcome: feasible = false with the
// smallest per-device memory that would fit and the largest batch that fits now (0 if none).
// Bad requests throw InputError. Thread-safety: a pure function; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/cluster.h"
#include "models/defaults.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "planner/plan_request.h"

namespace pw::planner {

// One (threads per stage, micro-batch count) of the joint search over measured points, with
// its best partition's stage count and predicted iteration (closed form, optimizer step included).
struct PlanCandidate {
  int threads_per_stage = 0;
  int micro_batches = 0;
  int stages = 0;
  double predicted_s = 0;
};

struct PlanOutcome {
  bool feasible = false;
  Plan plan;
  std::string reason;
  int64_t min_memory_bytes_to_fit = 0;
  int64_t max_batch_that_fits = 0;
  std::vector<PlanCandidate> candidates;  // sync over measured points: fastest first; else empty
};

PlanOutcome make_plan(const models::Profile& profile, const models::Cluster& cluster, const PlanRequest& req);

// A readable table of a plan: per stage its layers, replicas, re-materialization, forward,
// backward and communication time per micro-batch, all-reduce time and memory; then the
// totals and the figures of planner/plan_figures.h (with the compatibility bubble_rate).
std::string format_plan_table(const Plan& plan);

}  // namespace pw::planner
