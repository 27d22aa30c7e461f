// The level-0 compute time of a segment of cut states [i, j] under the replicated DP's cost
// model (planner/replicated_dp.h): the profile's compute from state i to j, in seconds (PipeDream's
// quirks: ns / 1e9; otherwise scaled by time_scale). Shared by the DP (replicated_dp.cc) and the
// plan re-evaluation (replicated_evaluate.cc) so that both price a segment identically.
#pragma once

#include <cstdint>

#include "planner/replicated_dp.h"

namespace pw::planner {

inline double segment_compute_s(const CutStates& s, const ReplicatedOptions& o, int i, int j) {
  const int64_t c = s.compute_ns[j] - (i == 0 ? 0 : s.compute_ns[i - 1]);
  return o.quirks ? static_cast<double>(c) / 1e9 : static_cast<double>(c) * o.time_scale;
}

}  // namespace pw::planner
