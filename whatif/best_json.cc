#include "whatif/best_json.h"

namespace pw::whatif {

void to_json(Json& j, const EvaluatedLayout& row) {
  const Layout& l = row.layout;
  const Evaluation& e = row.evaluation;
  j = Json{{"tp", l.tp},
           {"pp", l.pp},
           {"dp", l.dp},
           {"micro_batch", l.micro_batch},
           {"chunks", l.chunks},
           {"schedule", l.schedule()},
           {"recompute", l.recompute},
           {"sequence_parallel", l.sequence_parallel},
           {"zero1", l.zero1},
           {"feasible", e.feasible},
           {"reason", e.reason},
           {"iteration_s", e.iteration_s},
           {"samples_per_s", e.samples_per_s},
           {"tflops_per_device", e.tflops_per_device},
           {"mfu", e.mfu},
           {"peak_memory_bytes", e.peak_memory_bytes},
           {"weights_optimizer_bytes", e.weights_optimizer_bytes},
           {"compute_s", e.split.compute},
           {"bubble_s", e.split.bubble},
           {"tp_s", e.split.tp},
           {"pp_s", e.split.pp},
           {"dp_s", e.split.dp}};
}

void to_json(Json& j, const BestDocument& doc) {
  const SearchResult& r = doc.result;
  const auto row = [&r](size_t k) { return Json(EvaluatedLayout{r.layouts[k], r.evaluations[k]}); };
  j = Json{{"format", "pipewright.whatif-best/1"}, {"candidates", r.layouts.size()}};
  j["best"] = r.best >= 0 ? row(static_cast<size_t>(r.best)) : Json();
  Json frontier = Json::array();
  for (int k : r.frontier) frontier.push_back(row(static_cast<size_t>(k)));
  j["frontier"] = frontier;
  if (doc.all) {
    Json all = Json::array();
    for (size_t k = 0; k < r.layouts.size(); ++k) all.push_back(row(k));
    j["all"] = all;
  }
}

}  // namespace pw::whatif
