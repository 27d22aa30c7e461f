// Planning with its prediction, and simulating a plan: what `plan`, `simulate --plan`, `demo`,
// `whatif` and `run --compare` share, so that each of them gets the plan and the number the
// others get.
//
// plan_with_prediction plans every schedule, also the two the DP has no closed form for:
// - zb-h2 plans zb-h1's partition (the same B/W split); the simulation of zb-h2 on it is the
//   prediction and the memory check (zb-h2 keeps more micro-batches in flight);
// - interleaved-1f1b plans 1f1b's devices and micro-batches, then re-cuts the model into
//   p x chunks balanced virtual stages (planner/interleave.h); its per-stage costs are the
//   simulated virtual stages'.
// The DP searches with its closed-form costs; the plan it picked (or the one `choose` keeps) is
// then simulated once with the same engine and inputs `simulate --plan` uses, and the plan's
// iteration, throughput, peak memory, bubble, imbalance and idle share become the
// simulation's (synchronous plans of the sync objective). Per-stage predictions and the
// bottleneck stay the closed form's (they justify the choice).
// An asynchronous plan (pipedream-async, 2bw; the async and pipedream objectives) is simulated
// as `simulate --plan` simulates it (kAsyncPlanIterations back to back, the steady state), and
// its throughput and iteration (batch / throughput) become the simulation's, so that `simulate
// --plan` reproduces what the plan says; bottleneck_time_s keeps the objective's value (batch /
// bottleneck is the objective's throughput: PipeDream's optimizer charges one link for a
// stage's activations and gradients together, 623 samples/s for vgg16 on --levels 4
// --activation-comm, where the full-duplex links of sim/network.h pass them at once, 735).
// planner::make_plan, which PipeDream's parity tests call, is unchanged. Pure; safe to call
// concurrently when `choose` is.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/cluster.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "planner/planner.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"

namespace pw::sim {

// Iterations an asynchronous plan is simulated for its steady state (`simulate --plan`'s
// default, and the prediction plan_with_prediction records).
inline constexpr int kAsyncPlanIterations = 100;

// One simulation of `plan` with these stage costs: a schedule of the plan's kind
// (schedule_for_plan) on the network of `cluster` (network_for_plan; free transfers when null).
SimResult simulate_plan(const planner::Plan& plan, const StageCosts& costs, const models::Cluster* cluster,
                        const SimOptions& options = {});
// The same with the stage costs taken from the profile the plan was made from.
SimResult simulate_plan(const planner::Plan& plan, const models::Profile& profile, const models::Cluster* cluster,
                        const SimOptions& options = {});

struct SimulatedPrediction {
  StageCosts costs;                        // the stage costs simulated
  std::vector<int64_t> device_peak_bytes;  // per pipeline device
};

// Replaces plan.predicted's whole-plan figures with one simulation of the plan (the schedule
// bubble measured too). Per-stage figures are left as they are.
SimulatedPrediction predict_by_simulation(planner::Plan& plan, const models::Profile& profile,
                                          const models::Cluster& cluster);

// A caller's choice between the closed-form search and the simulation (`plan --measure` runs
// trials of the near ties): given the search's outcome (feasible), returns the plan to keep.
using PlanChooser = std::function<planner::Plan(const planner::PlanOutcome&)>;

struct PlanningOptions {
  // false: the closed form's (or the objective's) prediction is kept (what-if sweeps that
  // simulate on their own terms, or not at all); zb-h2 and interleaved-1f1b are simulated
  // regardless.
  bool simulate = true;
  PlanChooser choose;  // empty: keep the search's plan
};

// make_plan for every schedule (see the header). req.chunks applies to interleaved-1f1b only
// (0: 2 per device). Infeasible outcomes as make_plan's; zb-h2 or interleaved-1f1b whose
// simulated peak exceeds the memory limit is infeasible too, with min_memory_bytes_to_fit =
// that peak and max_batch_that_fits = -1 (not searched). Throws InputError for a bad request.
planner::PlanOutcome plan_with_prediction(const models::Profile& profile, const models::Cluster& cluster,
                                          const planner::PlanRequest& req, const PlanningOptions& options = {});

}  // namespace pw::sim
