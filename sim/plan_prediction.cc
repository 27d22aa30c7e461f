#include "sim/plan_prediction.h"

#include <string>

#include "models/error.h"
#include "models/human_units.h"
#include "planner/interleave.h"
#include "planner/schedule.h"

namespace pw::sim {

SimResult simulate_plan(const planner::Plan& plan, const StageCosts& costs, const models::Cluster* cluster,
                        const SimOptions& options) {
  return simulate(schedule_for_plan(plan, costs), costs, network_for_plan(plan, cluster), options);
}

SimResult simulate_plan(const planner::Plan& plan, const models::Profile& profile, const models::Cluster* cluster,
                        const SimOptions& options) {
  return simulate_plan(plan, stage_costs_from_plan(plan, profile, cluster), cluster, options);
}

SimulatedPrediction predict_by_simulation(planner::Plan& plan, const models::Profile& profile,
                                          const models::Cluster& cluster) {
  SimulatedPrediction out;
  out.costs = stage_costs_from_plan(plan, profile, &cluster);
  SimOptions so;
  so.schedule_bubble = true;
  const Report r = simulate_plan(plan, out.costs, &cluster, so).report;
  planner::PlanPrediction& q = plan.predicted;
  q.iteration_time_s = static_cast<double>(r.iteration_ns) * 1e-9;
  q.throughput_samples_per_s = q.iteration_time_s > 0 ? static_cast<double>(plan.batch) / q.iteration_time_s : 0;
  q.peak_memory_bytes = r.peak_memory_bytes;
  q.bubble_rate = r.bubble_rate;
  q.schedule_bubble = r.schedule_bubble;
  q.stage_imbalance = r.stage_imbalance;
  q.idle_share = r.idle_share;
  for (const auto& d : r.devices) out.device_peak_bytes.push_back(d.peak_memory_bytes);
  return out;
}

namespace {

// zb-h2 / interleaved-1f1b: the per-stage memory (and, interleaved, the per-stage costs) are
// the simulated virtual stages'; no closed form stands behind them.
void take_simulated_stage_figures(planner::Plan& plan, const SimulatedPrediction& sim, bool interleaved) {
  const int p = plan.num_stages() / plan.chunks;
  for (int s = 0; s < plan.num_stages(); ++s) {
    planner::StagePlan& st = plan.stages[s];
    st.predicted.memory_bytes = sim.device_peak_bytes.at(s % p);
    if (!interleaved) continue;
    st.predicted.forward_ns = sim.costs.forward_ns.at(s);
    st.predicted.backward_ns = sim.costs.backward_input_ns.at(s) + sim.costs.backward_weight_ns.at(s) +
                               (st.recompute ? sim.costs.forward_ns.at(s) : 0);
  }
}

// An asynchronous plan: throughput and iteration from the steady state that `simulate --plan`
// reports; the bottleneck (the objective's value) stays.
void record_async_simulation(planner::Plan& plan, const models::Profile& profile, const models::Cluster& cluster) {
  SimOptions so;
  so.iterations = kAsyncPlanIterations;
  so.validate = false;  // made by schedule_for_plan, valid by construction
  const Report r = simulate_plan(plan, profile, &cluster, so).report;
  if (!(r.throughput_samples_per_s > 0)) return;
  planner::PlanPrediction& q = plan.predicted;
  q.throughput_samples_per_s = r.throughput_samples_per_s;
  q.iteration_time_s = static_cast<double>(plan.batch) / r.throughput_samples_per_s;
}

}  // namespace

planner::PlanOutcome plan_with_prediction(const models::Profile& profile, const models::Cluster& cluster,
                                          const planner::PlanRequest& req, const PlanningOptions& options) {
  const bool zb_h2 = req.schedule == planner::ScheduleKind::zb_h2;
  const bool interleaved = req.schedule == planner::ScheduleKind::interleaved_1f1b;
  if ((zb_h2 || interleaved) && req.objective != planner::Objective::sync)
    throw InputError("--schedule " + planner::to_string(req.schedule) +
                     ": planned by the sync objective only, got --objective " +
                     std::string(planner::to_string(req.objective)));
  if (req.chunks != 0 && !interleaved) throw InputError("--chunks: only with --schedule interleaved-1f1b");
  const int chunks = req.chunks != 0 ? req.chunks : 2;
  if (interleaved && chunks < 2)
    throw InputError("--chunks: interleaved-1f1b needs at least 2 chunks per device, got " + std::to_string(chunks));

  planner::PlanRequest base = req;
  base.chunks = 0;
  if (zb_h2) base.schedule = planner::ScheduleKind::zb_h1;
  if (interleaved) base.schedule = planner::ScheduleKind::one_f_one_b;
  planner::PlanOutcome out = planner::make_plan(profile, cluster, base);
  if (!out.feasible) return out;
  if (options.choose) out.plan = options.choose(out);
  if (zb_h2) out.plan.schedule = planner::ScheduleKind::zb_h2;
  if (interleaved) out.plan = planner::interleave_plan(out.plan, profile, chunks);
  const bool simulate = options.simulate || zb_h2 || interleaved;
  if (!simulate) return out;
  if (!planner::is_synchronous(out.plan.schedule)) {
    record_async_simulation(out.plan, profile, cluster);
    return out;
  }
  if (out.plan.objective != "sync") return out;

  const SimulatedPrediction sim = predict_by_simulation(out.plan, profile, cluster);
  if (!zb_h2 && !interleaved) return out;
  take_simulated_stage_figures(out.plan, sim, interleaved);
  const int64_t have = req.memory_limit_bytes > 0 ? req.memory_limit_bytes : cluster.device().memory_bytes;
  const int64_t peak = out.plan.predicted.peak_memory_bytes;
  if (peak > have) {
    out.feasible = false;
    out.reason = std::string(zb_h2 ? "zb-h2 on the zb-h1 partition" : "interleaved-1f1b") + " needs " +
                 models::human_bytes(static_cast<double>(peak)) + " per device, more than " +
                 models::human_bytes(static_cast<double>(have)) + "; try " +
                 (zb_h2 ? "--schedule zb-h1" : "--schedule 1f1b") + " or fewer --micro-batches";
    out.min_memory_bytes_to_fit = peak;
    out.max_batch_that_fits = -1;
  }
  return out;
}

}  // namespace pw::sim
