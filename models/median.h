// median_of: the median of a list of values, shared by the planner (near_ties: which trial run
// was fastest) and the simulator (replay: measured and replayed iteration times).
#pragma once

#include <algorithm>
#include <vector>

namespace pw::models {

// The middle value; the mean of the two middle values for an even count; 0 for an empty list.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace pw::models
