#include "exec/runtime/run_checkpoint.h"

#include "exec/device_ops.h"
#include "exec/runtime/checkpoint.h"
#include "exec/runtime/trainer.h"
#include "models/error.h"
#include "planner/schedule_gen.h"

namespace pw::exec {

Json run_checkpoint_identity(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options,
                             const BatchSlicer& slicer) {
  Json stages = Json::array();
  for (const auto& st : plan.stages) stages.push_back(Json::array({st.first_layer, st.end_layer, st.recompute}));
  Json options_id = optimizer_identity(options.optimizer);
  options_id["seed"] = options.seed;
  options_id["data"] = slicer.describe();
  return checkpoint_identity(model,
                             Json{{"command", "run"},
                                  {"stages", stages},
                                  {"schedule", std::string(planner::to_string(plan.schedule))},
                                  {"chunks", plan.chunks},
                                  {"micro_batch_size", plan.micro_batch_size},
                                  {"num_micro_batches", plan.num_micro_batches},
                                  {"batch", plan.batch}},
                             options_id);
}

void check_run_checkpointing(const RunSetup& setup, const planner::Plan& plan, const PipelineRunOptions& options) {
  const bool checkpointing = !options.checkpoint_dir.empty() || !options.resume_dir.empty();
  const std::string flag = options.resume_dir.empty() ? "--checkpoint" : "--resume";
  if (checkpointing && options.vertical_sync)
    throw InputError(flag +
                     ": not supported with --vertical-sync (the weight versions it keeps across steps are not saved)");
  if (checkpointing && plan.schedule == planner::ScheduleKind::two_bw)
    throw InputError(flag + ": not supported with 2bw yet (its second weight buffer is not saved)");
  if (checkpointing && setup.compute->splits_tied_table())
    throw InputError(
        flag + ": not supported yet with tied embeddings split across stages (the shared table's copy is not saved)");
  if (options.checkpoint_every < 0) throw InputError("--checkpoint-every: expected >= 0");
  if (options.checkpoint_every > 0 && options.checkpoint_dir.empty())
    throw InputError("--checkpoint-every: needs --checkpoint DIR");
}

HostStagedState::HostStagedState(StageState state) : device_(std::move(state)), host_(device_) {
  for (const auto& [name, t] : device_.tensors)
    if (!t->device().is_cpu()) copies_.emplace_back(t->shape());
  size_t k = 0;
  for (auto& [name, t] : host_.tensors)
    if (!t->device().is_cpu()) t = &copies_[k++];
}

void HostStagedState::download() {
  size_t k = 0;
  for (const auto& [name, t] : device_.tensors)
    if (!t->device().is_cpu()) copy_to_host(*t, copies_[k++].data());
}

void HostStagedState::upload() {
  size_t k = 0;
  for (auto& [name, t] : device_.tensors)
    if (!t->device().is_cpu()) copy_from_host(copies_[k++].data(), *t);
}

}  // namespace pw::exec
