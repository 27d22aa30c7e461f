#include "exec/profile/measure_memory.h"

#include <algorithm>

#include "models/error.h"
#include "models/human_units.h"

namespace pw::exec {

int64_t in_context_copy_bytes(const models::Profile& bytes, int64_t base_mb, int64_t mb,
                              const std::vector<bool>& layers, const std::vector<PassOp>& order) {
  if (base_mb < 1 || mb < 1)
    throw InputError("measure memory: expected micro-batch sizes >= 1, got " + std::to_string(base_mb) + " and " +
                     std::to_string(mb));
  const auto& ls = bytes.layers;
  if (!layers.empty() && layers.size() != ls.size())
    throw InputError("measure memory: a mask of " + std::to_string(layers.size()) + " layers for a profile of " +
                     std::to_string(ls.size()));
  int64_t state = 0, stash = 0, transient = 0;
  for (size_t i = 0; i < ls.size(); ++i) {
    if (!layers.empty() && !layers[i]) continue;
    state += 2 * ls[i].parameter_bytes + ls[i].optimizer_bytes;
    stash += ls[i].stash_bytes;
    transient = std::max(transient, 2 * ls[i].output_bytes + ls[i].workspace_bytes);
  }
  if (!order.empty()) {  // the most held at once, op by op
    int64_t held = 0, peak = 0;
    for (const PassOp& op : order) {
      if (op.begin < 0 || op.end > static_cast<int>(ls.size()) || op.begin > op.end)
        throw InputError("measure memory: an op over layers [" + std::to_string(op.begin) + ", " +
                         std::to_string(op.end) + ") of a profile of " + std::to_string(ls.size()));
      int64_t s = 0, w = 0;
      for (int i = op.begin; i < op.end; ++i) {
        s += ls[i].stash_bytes;
        w += ls[i].weight_pending_bytes;
      }
      switch (op.kind) {
        case PassOp::Kind::F: held += s; break;
        case PassOp::Kind::B: held += w; break;
        case PassOp::Kind::W: held -= s + w; break;
        case PassOp::Kind::BW: held -= s; break;
      }
      peak = std::max(peak, held);
    }
    stash = peak;
  }
  const double scale = static_cast<double>(mb) / static_cast<double>(base_mb);
  return state + static_cast<int64_t>(static_cast<double>(stash + transient) * scale);
}

std::string measure_memory_shortfall(int64_t mb, int copies, int64_t need, int64_t available) {
  if (available <= 0) return "";
  if (static_cast<double>(need) <= kMeasureMemoryShare * static_cast<double>(available)) return "";
  return "micro-batch " + std::to_string(mb) + " with " + std::to_string(copies) + " co-run cop" +
         (copies == 1 ? "y" : "ies") + " needs about " + models::gib_text(static_cast<double>(need)) + ", more than " +
         std::to_string(static_cast<int>(kMeasureMemoryShare * 100 + 0.5)) + "% of the " +
         models::gib_text(static_cast<double>(available)) + " available";
}

}  // namespace pw::exec
