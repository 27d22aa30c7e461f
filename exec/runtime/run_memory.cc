#include "exec/runtime/run_memory.h"

#include <algorithm>
#include <numeric>

#include "exec/runtime/device_compare.h"
#include "exec/runtime/run_pipeline.h"
#include "models/cost.h"
#include "models/error.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"

namespace pw::exec {

namespace {

// One simulated run of the plan over the analytic profile, for its memory.
struct SimulatedMemory {
  planner::Schedule schedule;
  sim::StageCosts costs;
  sim::SimResult result;
};

std::optional<SimulatedMemory> simulate_memory(const models::Model& model, const planner::Plan& plan,
                                               const OptimizerOptions& optimizer, const planner::Schedule* schedule) {
  if (!models::has_analytic_costs(model)) return std::nullopt;
  const models::Profile profile =
      models::analytic_memory_profile(model, plan.micro_batch_size, optimizer_memory(optimizer).name);
  SimulatedMemory m;
  m.costs = sim::stage_costs_from_plan(plan, profile);
  m.schedule = schedule ? *schedule : schedule_for_run(plan);
  sim::SimOptions so;
  so.iterations = planner::is_synchronous(plan.schedule) ? 1 : 2;
  so.record_trace = true;
  m.result = sim::simulate(m.schedule, m.costs, sim::network_for_plan(plan, nullptr), so);
  return m;
}

int64_t at_or_zero(const std::vector<int64_t>& v, int i) { return i < static_cast<int>(v.size()) ? v[i] : 0; }

}  // namespace

std::optional<std::vector<MemoryNeed>> predicted_run_memory(const models::Model& model, const planner::Plan& plan,
                                                            const OptimizerOptions& optimizer,
                                                            const planner::Schedule* schedule,
                                                            const std::vector<Device>& lanes) {
  const std::optional<SimulatedMemory> m = simulate_memory(model, plan, optimizer, schedule);
  if (!m) return std::nullopt;
  const planner::Schedule& sched = m->schedule;
  std::vector<MemoryNeed> needs;
  if (lanes.empty()) {
    MemoryNeed host{Device::cpu(), std::vector<int>(sched.num_devices), 0};
    std::iota(host.workers.begin(), host.workers.end(), 0);
    needs.push_back(std::move(host));
  } else {
    PW_CHECK(static_cast<int>(lanes.size()) == sched.num_devices,
             "predicted_run_memory: " + std::to_string(lanes.size()) + " lanes for " +
                 std::to_string(sched.num_devices) + " workers");
    for (Card& c : cards_of_lanes(lanes)) needs.push_back(MemoryNeed{c.gpu, std::move(c.workers), 0});
  }
  for (MemoryNeed& n : needs) n.bytes = card_peak_bytes(m->result.trace, n.workers);
  return needs;
}

std::optional<RankNeed> predicted_rank_memory(const models::Model& model, const planner::Plan& plan,
                                              const OptimizerOptions& optimizer, const planner::Schedule* schedule,
                                              int rank) {
  const std::optional<SimulatedMemory> m = simulate_memory(model, plan, optimizer, schedule);
  if (!m) return std::nullopt;
  const planner::Schedule& sched = m->schedule;
  PW_CHECK(rank >= 0 && rank < sched.num_devices, "predicted_rank_memory: rank " + std::to_string(rank) + " of " +
                                                      std::to_string(sched.num_devices) + " workers");
  std::vector<int> all(static_cast<size_t>(sched.num_devices));
  std::iota(all.begin(), all.end(), 0);
  RankNeed need;
  need.own_bytes = card_peak_bytes(m->result.trace, {rank});
  need.all_bytes = card_peak_bytes(m->result.trace, all);
  for (int s = 0; s < sched.num_stages; ++s)
    if (sched.stage_device[s] != 0)  // the state of a stage rank 0 does not run: less the gradients
      need.rank0_checkpoint_bytes =
          std::max(need.rank0_checkpoint_bytes,
                   at_or_zero(m->costs.weights_optimizer_bytes, s) - at_or_zero(m->costs.parameter_bytes, s));
  return need;
}

}  // namespace pw::exec
