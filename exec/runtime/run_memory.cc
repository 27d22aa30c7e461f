#include "exec/runtime/run_memory.h"

#include <numeric>

#include "exec/runtime/device_compare.h"
#include "exec/runtime/run_pipeline.h"
#include "models/cost.h"
#include "models/error.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"

namespace pw::exec {

std::optional<std::vector<MemoryNeed>> predicted_run_memory(const models::Model& model, const planner::Plan& plan,
                                                            const OptimizerOptions& optimizer,
                                                            const planner::Schedule* schedule,
                                                            const std::vector<Device>& lanes) {
  if (!models::has_analytic_costs(model)) return std::nullopt;
  const models::Profile profile =
      models::analytic_memory_profile(model, plan.micro_batch_size, optimizer_memory(optimizer).name);
  const sim::StageCosts costs = sim::stage_costs_from_plan(plan, profile);
  const planner::Schedule sched = schedule ? *schedule : schedule_for_run(plan);
  sim::SimOptions so;
  so.iterations = planner::is_synchronous(plan.schedule) ? 1 : 2;
  so.record_trace = true;
  const sim::SimResult sr = sim::simulate(sched, costs, sim::network_for_plan(plan, nullptr), so);

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
  for (MemoryNeed& n : needs) n.bytes = card_peak_bytes(sr.trace, n.workers);
  return needs;
}

}  // namespace pw::exec
