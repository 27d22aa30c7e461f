#include "exec/runtime/run_imported.h"

#include <string>

#include "exec/runtime/run_pipeline.h"
#include "models/error.h"
#include "planner/schedule_validate.h"

namespace pw::exec {

void check_imported_schedule(const planner::Plan& plan, const planner::Schedule& schedule) {
  if (!schedule.stage_replicas.empty()) throw InputError("schedule: replicated stages cannot be imported");
  planner::validate_schedule(schedule);
  const int S = plan.num_stages();
  if (schedule.num_stages != S)
    throw InputError("schedule: " + std::to_string(schedule.num_stages) + " stages, but the plan has " +
                     std::to_string(S));
  if (schedule.num_micro_batches != plan.num_micro_batches)
    throw InputError("schedule: " + std::to_string(schedule.num_micro_batches) + " micro-batches, but the plan has " +
                     std::to_string(plan.num_micro_batches));
  if (plan.chunks < 1 || schedule.num_devices * plan.chunks != S)
    throw InputError("schedule: " + std::to_string(schedule.num_devices) + " devices, but the plan has " +
                     std::to_string(S) + " stages in chunks of " + std::to_string(plan.chunks));
  for (int s = 0; s < S; ++s) {
    const auto& devs = plan.stages[s].devices;
    if (devs.size() != 1 || devs[0] != schedule.stage_device.at(s))
      throw InputError("schedule: stage " + std::to_string(s) + " runs on device " +
                       std::to_string(schedule.stage_device.at(s)) + ", but the plan puts it elsewhere");
  }
}

planner::Schedule schedule_for_run(const planner::Plan& plan, const PipelineRunOptions& options) {
  // An imported schedule was checked against the plan by check_plan_for_model (every caller
  // runs it first), so it is not validated a second time here.
  return options.schedule ? *options.schedule : schedule_for_run(plan);
}

planner::Plan even_plan_for_schedule(const models::Model& model, const planner::Schedule& schedule,
                                     int64_t micro_batch_size, bool recompute, const std::string& where) {
  if (!schedule.stage_replicas.empty()) throw InputError(where + ": replicated stages cannot be run from a CSV");
  const int p = schedule.num_devices, V = schedule.num_stages;
  if (p < 1 || V % p != 0)
    throw InputError(where + ": " + std::to_string(V) + " stages do not divide among " + std::to_string(p) +
                     " ranks (every rank needs the same number of stages)");
  if (V > static_cast<int>(model.layers().size()))
    throw InputError(where + ": " + std::to_string(V) + " stages but model \"" + model.name() + "\" has only " +
                     std::to_string(model.layers().size()) + " layers");
  // even_plan's cut, loop placement; then each stage moves to the device the CSV gives it.
  planner::Plan plan =
      even_plan(model, p, schedule.num_micro_batches, micro_batch_size, schedule.kind, recompute, V / p);
  for (int s = 0; s < V; ++s) plan.stages[s].devices = {schedule.stage_device.at(s)};
  plan.partitioner = "even (imported schedule)";
  return plan;
}

}  // namespace pw::exec
