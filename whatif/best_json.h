// The JSON of the 3D layout search (whatif/megatron.h), as `whatif best --json` prints it:
// format pipewright.whatif-best/1 — the number of candidates, the best layout, the time/memory
// frontier and, when asked, every candidate; each layout one row of its axes and its
// evaluation (feasibility, time, throughput, MFU, memory, the iteration's split).
// The structs refer to what they serialise, which must outlive them.
#pragma once

#include "models/json_util.h"
#include "whatif/megatron.h"

namespace pw::whatif {

// One layout and its evaluation: tp, pp, dp, micro_batch, chunks, schedule, recompute,
// sequence_parallel, zero1, feasible, reason, iteration_s, samples_per_s, tflops_per_device,
// mfu, peak_memory_bytes, weights_optimizer_bytes, compute_s, bubble_s, tp_s, pp_s, dp_s.
struct EvaluatedLayout {
  const Layout& layout;
  const Evaluation& evaluation;
};
void to_json(Json& j, const EvaluatedLayout& row);

// {"format", "candidates", "best" (a row, null when none fits), "frontier" (rows), and with
// `all` "all" (every candidate's row, in search order)}.
struct BestDocument {
  const SearchResult& result;
  bool all = false;
};
void to_json(Json& j, const BestDocument& doc);

}  // namespace pw::whatif
