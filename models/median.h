// median_of: the median of a list of values, shared by the planner (near_ties: which trial run
// was fastest) and the simulator (replay: measured and replayed iteration times).
// trimmed_mean_of: the mean without the lowest and highest `trim` share of the values, the
// estimator of a layer's time that is summed into a stage's (exec/profiler.h).
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

// The mean of the values left after dropping floor(n * trim) from each end (trim in [0, 0.5));
// 0 for an empty list. A stage's time is the sum of its layers' times, and the typical value
// of a sum is the sum of the means: op times skew right (a layer now and then runs long), so a
// sum of medians falls short of it. The trim keeps a rare outlier (a preempted thread) out.
inline double trimmed_mean_of(std::vector<double> v, double trim) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t cut = static_cast<size_t>(static_cast<double>(v.size()) * std::clamp(trim, 0.0, 0.499));
  double sum = 0;
  for (size_t i = cut; i < v.size() - cut; ++i) sum += v[i];
  return sum / static_cast<double>(v.size() - 2 * cut);
}

}  // namespace pw::models
