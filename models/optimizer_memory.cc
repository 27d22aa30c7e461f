#include "models/optimizer_memory.h"

#include "models/error.h"
#include "models/error_text.h"

namespace pw::models {

const std::vector<OptimizerMemory>& optimizer_catalog() {
  static const std::vector<OptimizerMemory> catalog = {
      {"sgd", 4, 4, 0},
      {"sgd-momentum", 4, 4, 4},
      {"rmsprop", 4, 4, 4},
      {"adam", 4, 4, 8},
      {"adam-mixed", 2, 4, 12},
  };
  return catalog;
}

const OptimizerMemory& find_optimizer(std::string_view name) {
  for (const OptimizerMemory& o : optimizer_catalog())
    if (o.name == name) return o;
  std::string known;
  for (const OptimizerMemory& o : optimizer_catalog()) known += (known.empty() ? "" : ", ") + o.name;
  throw InputError("unknown optimizer \"" + escape_for_message(name) + "\" (known: " + known + ")");
}

}  // namespace pw::models
