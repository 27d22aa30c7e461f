// Stage costs of a Plan, from the Profile it was made from (and the Cluster it runs on).
//
// Plan stages are the schedule's virtual stages in model order (with chunks v > 1, stage k
// runs on pipeline device k mod (stages / v), as planner::make_schedule lays them out).
// For stage k over layers [first_layer, end_layer) of the profile:
// - forward/backward_input/backward_weight_ns: sums over its layers (data-loading sources
//   excluded), scaled linearly from profile.micro_batch to plan.micro_batch_size samples
//   (rounded to the nearest ns); recompute flag copied (the engine adds the re-forward);
// - activation_bytes[k] (k -> k+1) = gradient_bytes[k+1]: the output bytes of every layer
//   before the cut with an edge to a layer after it (each such layer once; skip connections
//   are relayed through the stages they jump over, so they count at every cut they cross),
//   scaled like times; gradient bytes omit data-loading sources;
// - memory: weights_optimizer_bytes = 2 x parameters (weights + gradients) + optimizer
//   state; parameter_bytes; stash per micro-batch = sum of stash_bytes; input per
//   micro-batch = activation_bytes[k-1] (stage 0: its data-loading outputs); working =
//   the largest workspace of its layers (all scaled but parameters/optimizer);
// - replicas r > 1: every replica runs the stage's costs for the micro-batches it owns
//   (schedule_for_plan); allreduce_ns = one ring all-reduce of the stage's parameter bytes
//   among its devices (planner::ring_allreduce: 2(r-1)/r x bytes / bandwidth + 2(r-1) x
//   latency of the level joining them; 0 without a cluster), run as a collective per
//   iteration (synchronous) or after each backward (asynchronous) (sim/engine.h).
// - step_ns per device: the sum of its layers' step_ns (the optimizer step and gradient
//   zeroing per iteration), left empty when the profile has none;
// - a profile with measured points (models/profile_points.h) is first taken at the plan's
//   micro-batch size and threads_per_stage (profile_at), so times come from the measured or
//   interpolated point rather than from linear scaling.
// Throws InputError when a stage's range or layer names do not match the profile.
#pragma once

#include <optional>

#include "models/cluster.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "planner/schedule.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "sim/report.h"

namespace pw::sim {

// What a trace of `iterations` iterations of this plan does not say itself (for summarize()).
RunInfo run_info_for_plan(const planner::Plan& plan, int iterations);

StageCosts stage_costs_from_plan(const planner::Plan& plan, const models::Profile& profile,
                                 const models::Cluster* cluster = nullptr);

// Without a profile: the plan's own per-stage predictions (forward_ns; backward_ns as B with
// W = 0; allreduce_ns; weights_optimizer_bytes). Transfers and activation memory are unknown
// (zero): a rough picture of the schedule, not a prediction of its memory.
StageCosts stage_costs_from_predictions(const planner::Plan& plan);

// The plan's schedule (make_schedule with its kind, pipeline devices, micro-batches and
// chunks), with one allreduce op inserted before the step (or at the end, asynchronous
// schedules) of every device whose stages have allreduce_ns > 0.
// A plan with a replicated stage: planner::make_replicated_schedule over the replica counts,
// its devices numbered stage by stage (stage 0's replicas first, in the plan's device order),
// all-reduces for the stages with allreduce_ns > 0. Asynchronous plans, replicated or not, run
// round_robin_micro_batches(m, replicas) micro-batches per simulated iteration (so every
// replica owns the same micro-batches each iteration and the 1F1B warm-up fits in one: one
// simulated iteration is that many / m of the plan's mini-batches). Chunks > 1 with replicas:
// InputError.
planner::Schedule schedule_for_plan(const planner::Plan& plan, const StageCosts& costs);

// Network of the plan: pipeline device d (virtual stage d's first device) mapped onto the
// cluster; with a replicated stage, every device of every stage in stage order (as
// schedule_for_plan numbers them); free transfers without a cluster.
Network network_for_plan(const planner::Plan& plan, const models::Cluster* cluster);

// A schedule read from elsewhere (a PyTorch CSV) priced with a plan's costs and network: its
// ranks must be the plan's pipeline devices, rank r running the virtual stages the plan puts
// on pipeline device r (stage k on k mod (stages / chunks)), one device per stage. InputError
// naming the first difference.
void check_schedule_on_plan(const planner::Schedule& schedule, const planner::Plan& plan);

}  // namespace pw::sim
