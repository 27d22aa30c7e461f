#include "models/optimizer_memory.h"

#include <algorithm>

#include "models/cost.h"
#include "models/error.h"
#include "models/error_text.h"

namespace pw::models {

const std::vector<OptimizerMemory>& optimizer_catalog() {
  static const std::vector<OptimizerMemory> catalog = {
      {"sgd", 4, 4, 0, "SGD without momentum", true},
      {"sgd-momentum", 4, 4, 4, "SGD with momentum 0.9", true},
      {"rmsprop", 4, 4, 4, "RMSProp (one running mean of squared gradients)", false},
      {"adam", 4, 4, 8, "Adam (decoupled weight decay)", true},
      {"adam-mixed", 2, 4, 12, "Adam on bf16 weights with fp32 gradients, master copy and moments", false},
  };
  return catalog;
}

const OptimizerMemory& find_optimizer(std::string_view name) {
  for (const OptimizerMemory& o : optimizer_catalog())
    if (o.name == name) return o;
  throw InputError("unknown optimizer \"" + escape_for_message(name) + "\" (known: " + optimizer_names(", ") + ")");
}

std::string optimizer_names(std::string_view separator, bool cpu_executor_only) {
  std::string names;
  for (const OptimizerMemory& o : optimizer_catalog())
    if (o.cpu_executor || !cpu_executor_only) names += (names.empty() ? "" : std::string(separator)) + o.name;
  return names;
}

const OptimizerMemory& find_cpu_trainable_optimizer(std::string_view name, const std::string& flag) {
  const OptimizerMemory* found = nullptr;
  for (const OptimizerMemory& o : optimizer_catalog())
    if (o.name == name) found = &o;
  const std::string trains = optimizer_names(", ", true);
  if (!found)
    throw InputError(flag + ": unknown optimizer \"" + escape_for_message(name) + "\" (the CPU executor trains " +
                     trains + ")");
  if (!found->cpu_executor)
    throw InputError(flag + ": the CPU executor cannot train with " + found->name + " (" + found->meaning +
                     "); it trains " + trains + " (plan and whatif size all of " + optimizer_names(", ") + ")");
  return *found;
}

double estimated_training_bytes(const Model& model, const OptimizerMemory& optimizer, int64_t micro_batch,
                                int64_t in_flight) {
  double parameters = 0, stash = 0, workspace = 0;
  for (const LayerSpec& l : model.layers()) {
    LayerCost c;
    try {
      c = layer_cost(l, std::max<int64_t>(1, micro_batch), /*element_bytes=*/4);
    } catch (const InputError&) {
      continue;  // opaque (imported) layers have no analytic cost
    }
    parameters += static_cast<double>(c.parameter_bytes) / 4;
    stash += static_cast<double>(c.stash_bytes) + static_cast<double>(c.output_bytes);
    workspace = std::max(workspace, static_cast<double>(c.workspace_bytes));
  }
  return parameters * optimizer.total() + stash * static_cast<double>(std::max<int64_t>(1, in_flight)) + workspace;
}

}  // namespace pw::models
