#include "planner/near_ties.h"

#include <algorithm>
#include <string>

#include "models/error.h"
#include "models/median.h"

namespace pw::planner {

std::vector<PlanCandidate> near_ties(const std::vector<PlanCandidate>& candidates, double band, int max_count) {
  if (!(band >= 0)) throw InputError("near ties: expected a band >= 0, got " + std::to_string(band));
  if (max_count < 1) throw InputError("near ties: expected at least 1 candidate, got " + std::to_string(max_count));
  std::vector<PlanCandidate> out;
  if (candidates.empty()) return out;
  const double best = candidates.front().predicted_s;
  std::vector<PlanCandidate> within;
  for (const PlanCandidate& c : candidates)
    if (c.predicted_s <= best * (1 + band)) within.push_back(c);
  // Each shape (stages x threads per stage) by its best micro-batch count first, then the
  // others: the shapes are what the machine's state favours differently.
  std::vector<bool> taken(within.size(), false);
  for (size_t i = 0; i < within.size() && static_cast<int>(out.size()) < max_count; ++i) {
    bool seen = false;
    for (const PlanCandidate& o : out)
      seen = seen || (o.stages == within[i].stages && o.threads_per_stage == within[i].threads_per_stage);
    if (seen) continue;
    out.push_back(within[i]);
    taken[i] = true;
  }
  for (size_t i = 0; i < within.size() && static_cast<int>(out.size()) < max_count; ++i)
    if (!taken[i]) out.push_back(within[i]);
  std::stable_sort(out.begin(), out.end(),
                   [](const PlanCandidate& x, const PlanCandidate& y) { return x.predicted_s < y.predicted_s; });
  return out;
}

int fastest_by_median(const std::vector<std::vector<double>>& measured) {
  int win = -1;
  double best = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    if (measured[i].empty()) continue;
    const double m = models::median_of(measured[i]);
    if (win < 0 || m < best) {
      win = static_cast<int>(i);
      best = m;
    }
  }
  return win;
}

bool trials_settled(const std::vector<std::vector<double>>& measured, double margin) {
  if (!(margin >= 0)) throw InputError("trials: expected a margin >= 0, got " + std::to_string(margin));
  const int win = fastest_by_median(measured);
  if (win < 0) return false;
  const double best = models::median_of(measured[win]);
  for (size_t i = 0; i < measured.size(); ++i) {
    if (static_cast<int>(i) == win) continue;
    if (measured[i].empty()) return false;
    if (models::median_of(measured[i]) <= best * (1 + margin)) return false;
  }
  return true;
}

}  // namespace pw::planner
