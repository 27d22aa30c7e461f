#include "models/optimizer_memory.h"

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

}  // namespace pw::models
