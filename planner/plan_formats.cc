#include "planner/plan_formats.h"

#include <map>
#include <sstream>

#include "models/error.h"

namespace pw::planner {

namespace {

// Per plan stage, the layer kinds (from the profile) in order.
std::vector<std::vector<std::string>> stage_kinds(const Plan& plan, const models::Profile& profile, const char* fmt) {
  std::vector<std::vector<std::string>> out;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan& st = plan.stages[s];
    if (st.replicas() > 1)
      throw InputError(std::string(fmt) + ": stage " + std::to_string(s) + " has " + std::to_string(st.replicas()) +
                       " replicas; the framework runs one rank per stage (plan with --straight)");
    std::vector<std::string> kinds;
    for (const std::string& name : st.layer_names) {
      const int i = profile.index_of(name);
      if (i < 0)
        throw InputError(std::string(fmt) + ": the plan's layer \"" + name + "\" is not in the profile (model " +
                         profile.model + ")");
      kinds.push_back(profile.layers[i].is_data_loading ? "input" : profile.layers[i].kind);
    }
    out.push_back(std::move(kinds));
  }
  return out;
}

std::string repeat(char symbol, int n) {
  if (n <= 0) return "";
  if (n == 1) return std::string(1, symbol);
  return std::string(1, symbol) + "*" + std::to_string(n);
}

std::string megatron(const Plan& plan, const models::Profile& profile) {
  const auto kinds = stage_kinds(plan, profile, "--format megatron");
  std::string layout;
  int decoders = 0, losses = 0;
  for (size_t s = 0; s < kinds.size(); ++s) {
    if (s > 0) layout += '|';
    int run = 0;
    bool in_loss = false;
    std::string stage;
    for (size_t k = 0; k < kinds[s].size(); ++k) {
      const std::string& kind = kinds[s][k];
      if (kind == "transformer_block") {
        ++run;
        ++decoders;
        in_loss = false;
        continue;
      }
      stage += repeat('t', run);
      run = 0;
      if (kind == "input") continue;
      if (kind == "embedding") {
        stage += 'E';
        in_loss = false;
      } else if (kind == "layer_norm" || kind == "lm_head" || kind == "softmax_xent" || kind == "mse_loss") {
        if (!in_loss) {
          stage += 'L';
          ++losses;
        }
        in_loss = true;
      } else {
        throw InputError(
            "--format megatron: layer \"" + plan.stages[s].layer_names[k] + "\" (kind " + kind +
            ") has no Megatron layout symbol (E embedding, t transformer layer, L final norm, output and loss)");
      }
    }
    stage += repeat('t', run);
    layout += stage;
  }
  if (losses > 1)
    throw InputError("--format megatron: the output head and loss are split over stages; Megatron's L is one layer");
  const int chunks = plan.chunks < 1 ? 1 : plan.chunks;
  const int ranks = plan.num_stages() / chunks;
  std::ostringstream os;
  os << "--pipeline-model-parallel-size " << ranks;
  if (chunks > 1) os << " --num-virtual-stages-per-pipeline-rank " << chunks;
  os << " --num-layers " << decoders << " --pipeline-model-parallel-layout \"" << layout << "\""
     << " --micro-batch-size " << plan.micro_batch_size << " --global-batch-size " << plan.batch << "\n";
  return os.str();
}

std::string deepspeed(const Plan& plan, const models::Profile& profile) {
  const auto kinds = stage_kinds(plan, profile, "--format deepspeed");
  std::vector<int> parts = {0};
  std::vector<std::string> first, last;
  int n = 0;
  for (size_t s = 0; s < kinds.size(); ++s) {
    std::string f, l;
    for (size_t k = 0; k < kinds[s].size(); ++k) {
      if (kinds[s][k] == "input") continue;
      if (f.empty()) f = plan.stages[s].layer_names[k];
      l = plan.stages[s].layer_names[k];
      ++n;
    }
    parts.push_back(n);
    first.push_back(f);
    last.push_back(l);
  }
  std::ostringstream os;
  os << "# DeepSpeed PipelineModule(layers=<the model's " << n
     << " layers in this order, input excluded>, num_stages=" << plan.num_stages() << ")\n"
     << "# stage s owns layers[parts[s]:parts[s+1]] (PipelineModule.parts; set them by overriding "
        "_partition_layers)\n"
     << "num_stages = " << plan.num_stages() << "\nparts = [";
  for (size_t k = 0; k < parts.size(); ++k) os << (k ? ", " : "") << parts[k];
  os << "]\n";
  for (size_t s = 0; s < kinds.size(); ++s) {
    os << "# stage " << s << ": layers " << parts[s] << ".." << parts[s + 1] - 1;
    if (!first[s].empty()) os << " (" << first[s] << " .. " << last[s] << ")";
    else os << " (empty)";
    os << "\n";
  }
  os << "# micro_batch_size = " << plan.micro_batch_size << ", gradient_accumulation_steps = " << plan.num_micro_batches
     << "\n";
  return os.str();
}

std::string torch_schedule_class(const Plan& plan) {
  switch (plan.schedule) {
    case ScheduleKind::gpipe: return "ScheduleGPipe";
    case ScheduleKind::one_f_one_b: return "Schedule1F1B";
    case ScheduleKind::interleaved_1f1b: return "ScheduleInterleaved1F1B";
    case ScheduleKind::zb_h1:
    case ScheduleKind::zb_h2: return "ScheduleInterleavedZeroBubble";
    default: return "";
  }
}

// The split point before a stage's first layer: its module path where the profile has them
// (PyTorch bridge exports), else its name.
std::string torch_split_name(const Plan& plan, const models::Profile& profile, size_t s) {
  bool paths = false;
  for (const models::LayerProfile& l : profile.layers) paths = paths || !l.module.empty();
  const std::string& first = plan.stages[s].layer_names.front();
  if (!paths) return first;
  const std::string& module = profile.layers[profile.index_of(first)].module;
  if (module.empty())
    throw InputError("--format torch: stage " + std::to_string(s) + " begins at layer \"" + first +
                     "\", where no submodule call begins; PyTorch's split points are submodule paths");
  return module;
}

std::string torch_split(const Plan& plan, const models::Profile& profile) {
  stage_kinds(plan, profile, "--format torch");  // replicas and layer names checked
  std::ostringstream os;
  os << "from torch.distributed.pipelining import SplitPoint, pipeline\n"
     << "split_spec = {\n";
  for (size_t s = 1; s < plan.stages.size(); ++s)
    os << "    \"" << torch_split_name(plan, profile, s) << "\": SplitPoint.BEGINNING,  # stage " << s << "\n";
  os << "}\n"
     << "# pipe = pipeline(model, mb_args=(<one micro-batch of " << plan.micro_batch_size
     << " samples>,), split_spec=split_spec)  # " << plan.num_stages() << " stages\n";
  const std::string cls = torch_schedule_class(plan);
  if (cls.empty()) os << "# schedule: " << to_string(plan.schedule) << " has no torch.distributed.pipelining class\n";
  else os << "# schedule: " << cls << "(stages, n_microbatches=" << plan.num_micro_batches << ", loss_fn=...)\n";
  return os.str();
}

}  // namespace

PlanFormat parse_plan_format(std::string_view s, const std::string& where) {
  if (s == "megatron") return PlanFormat::megatron;
  if (s == "deepspeed") return PlanFormat::deepspeed;
  if (s == "torch") return PlanFormat::torch;
  throw InputError(where + ": unknown format \"" + std::string(s) + "\" (expected one of megatron, deepspeed, torch)");
}

std::string format_plan_for(const Plan& plan, const models::Profile& profile, PlanFormat format) {
  switch (format) {
    case PlanFormat::megatron: return megatron(plan, profile);
    case PlanFormat::deepspeed: return deepspeed(plan, profile);
    case PlanFormat::torch: return torch_split(plan, profile);
  }
  PW_CHECK(false, "PlanFormat without a formatter");
}

}  // namespace pw::planner
