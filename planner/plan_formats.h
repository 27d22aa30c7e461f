// A plan in the terms of the frameworks people run it with.
//
// - megatron: Megatron-LM's `--pipeline-model-parallel-layout` string (stages split by '|',
//   listed in virtual-stage order: every pipeline rank's chunk 0, then chunk 1, ...; symbols
//   E embedding, t transformer decoder layer, L loss (the final norm, output head and loss
//   together, as Megatron's last stage holds them); "t*3" for repeats) and the flags for the
//   stage counts: --pipeline-model-parallel-size,
//   --num-virtual-stages-per-pipeline-rank (chunks > 1), --num-layers, --micro-batch-size,
//   --global-batch-size. Only GPT-style layer kinds map: input (no symbol), embedding,
//   transformer_block, layer_norm / lm_head / softmax_xent / mse_loss.
// - deepspeed: DeepSpeed PipelineModule's partition boundaries `parts` (num_stages + 1
//   indices; stage s owns layers[parts[s]:parts[s+1]] of the PipelineModule's layer list, which
//   is the model's layer order without its input sources) and num_stages.
// - torch: torch.distributed.pipelining split points: one `SplitPoint.BEGINNING` at the
//   first layer of every stage after the first, named by its LayerProfile::module (the
//   submodule path the PyTorch bridge exported) where the profile has module paths, else by
//   its layer name; a stage that begins where no submodule call begins cannot be expressed, for `pipeline(module,
//   mb_args, split_spec=...)`, and the schedule class that runs the plan's schedule.
// Each text ends with a newline. Stage ranges use the plan's layer_names (authoritative).
// Throws InputError when the plan cannot be expressed: a replicated stage (these frameworks
// put one rank on a stage), a layer kind without a Megatron symbol, a plan whose layers are
// not the profile's.
#pragma once

#include <string>
#include <string_view>

#include "models/profile.h"
#include "planner/plan.h"

namespace pw::planner {

enum class PlanFormat { megatron, deepspeed, torch };

// Throws InputError("<where>: unknown format ...") naming the choices.
PlanFormat parse_plan_format(std::string_view s, const std::string& where);

std::string format_plan_for(const Plan& plan, const models::Profile& profile, PlanFormat format);

}  // namespace pw::planner
