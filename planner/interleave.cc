#include "planner/interleave.h"

#include <algorithm>
#include <limits>
#include <string>

#include "models/error.h"

namespace pw::planner {

std::vector<int> balanced_cuts(const std::vector<int64_t>& cost, int parts) {
  const int n = static_cast<int>(cost.size());
  if (parts < 1 || parts > n)
    throw InputError("balanced split: " + std::to_string(parts) + " parts of " + std::to_string(n) + " layers");
  std::vector<int64_t> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    if (cost[i] < 0) throw InputError("balanced split: negative cost at layer " + std::to_string(i));
    prefix[i + 1] = prefix[i] + cost[i];
  }
  // best[k][i]: smallest max-part of layers [0, i) in k parts; from[k][i]: start of the last part.
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> best(parts + 1, std::vector<int64_t>(n + 1, kInf));
  std::vector<std::vector<int>> from(parts + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= parts; ++k)
    for (int i = k; i <= n - (parts - k); ++i)
      for (int j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == kInf) continue;
        const int64_t v = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (v < best[k][i]) {  // strict: the earliest last cut wins ties
          best[k][i] = v;
          from[k][i] = j;
        }
      }
  std::vector<int> cuts(parts + 1, 0);
  cuts[parts] = n;
  for (int k = parts, i = n; k > 0; --k) {
    i = from[k][i];
    cuts[k - 1] = i;
  }
  return cuts;
}

namespace {

// (largest device load, largest virtual stage) of a cut, virtual stage k on device k mod p.
std::pair<int64_t, int64_t> loads(const std::vector<int64_t>& prefix, const std::vector<int>& cuts, int p) {
  std::vector<int64_t> device(p, 0);
  int64_t stage = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    const int64_t c = prefix[cuts[k + 1]] - prefix[cuts[k]];
    device[k % p] += c;
    stage = std::max(stage, c);
  }
  return {*std::max_element(device.begin(), device.end()), stage};
}

}  // namespace

std::vector<int> device_balanced_cuts(const std::vector<int64_t>& cost, int p, int chunks) {
  std::vector<int> cuts = balanced_cuts(cost, p * chunks);
  std::vector<int64_t> prefix(cost.size() + 1, 0);
  for (size_t i = 0; i < cost.size(); ++i) prefix[i + 1] = prefix[i] + cost[i];
  // Hill climb: move one inner boundary by one layer while that lowers (device, stage) loads.
  auto best = loads(prefix, cuts, p);
  for (bool improved = true; improved;) {
    improved = false;
    for (size_t k = 1; k + 1 < cuts.size(); ++k)
      for (int step : {-1, 1}) {
        const int moved = cuts[k] + step;
        if (moved <= cuts[k - 1] || moved >= cuts[k + 1]) continue;  // parts stay non-empty
        cuts[k] = moved;
        const auto l = loads(prefix, cuts, p);
        if (l < best) {
          best = l;
          improved = true;
        } else {
          cuts[k] -= step;
        }
      }
  }
  return cuts;
}

Plan interleave_plan(const Plan& base, const models::Profile& profile, int chunks) {
  const int p = base.num_stages();
  if (chunks < 2)
    throw InputError("--chunks: interleaved-1f1b needs at least 2 chunks per device, got " + std::to_string(chunks));
  if (p < 2)
    throw InputError("interleaved-1f1b: the plan uses " + std::to_string(p) +
                     " stage; interleaving needs 2 or more devices");
  if (!base.layer_order.empty())
    throw InputError(
        "interleaved-1f1b: plans in a layer order of their own (PipeDream antichains) are not interleaved");
  for (const StagePlan& s : base.stages)
    if (s.replicas() != 1) throw InputError("interleaved-1f1b: replicated stages are not interleaved");
  if (base.num_micro_batches % p != 0) {
    // The nearest counts below and above that are multiples of p and divide the batch.
    const int64_t m = base.num_micro_batches;
    int64_t lo = m / p * p, hi = lo + p;
    while (lo > 0 && base.batch % lo != 0) lo -= p;
    while (hi <= base.batch && base.batch % hi != 0) hi += p;
    std::string fix = "no count that is a multiple of " + std::to_string(p) + " divides the batch of " +
                      std::to_string(base.batch) + "; try another --batch";
    if (lo > 0 || hi <= base.batch) {
      fix = "try --micro-batches ";
      if (lo > 0) fix += std::to_string(lo);
      if (hi <= base.batch) fix += (lo > 0 ? " or " : "") + std::to_string(hi);
    }
    throw InputError("interleaved-1f1b: " + std::to_string(m) + " micro-batches are not a multiple of the " +
                     std::to_string(p) + " devices; " + fix);
  }
  // Cut between segments: runs of layers from one allowed stage start (models::
  // stage_starts_allowed: where module paths name the splits) to the next; layers otherwise.
  const int L = static_cast<int>(profile.layers.size());
  const std::vector<bool> ok = models::stage_starts_allowed(profile);
  std::vector<int> at;
  for (int i = 0; i < L; ++i)
    if (ok[i]) at.push_back(i);
  const int n = static_cast<int>(at.size());
  at.push_back(L);
  if (n < p * chunks)
    throw InputError("interleaved-1f1b: " + std::to_string(n) + (n == L ? " layers" : " places a stage may begin") +
                     " cannot make " + std::to_string(p) + " x " + std::to_string(chunks) +
                     " virtual stages; try fewer --chunks");
  std::vector<int64_t> cost(n, 0);
  for (int k = 0; k < n; ++k)
    for (int i = at[k]; i < at[k + 1]; ++i) {
      const models::LayerProfile& l = profile.layers[i];
      cost[k] += l.forward_ns + l.backward_input_ns + l.backward_weight_ns;
    }
  std::vector<int> cuts = device_balanced_cuts(cost, p, chunks);
  for (int& c : cuts) c = at[c];
  Plan plan = base;
  plan.schedule = ScheduleKind::interleaved_1f1b;
  plan.chunks = chunks;
  plan.stages.clear();
  for (int k = 0; k < p * chunks; ++k) {
    const StagePlan& home = base.stages[k % p];
    StagePlan s;
    s.first_layer = cuts[k];
    s.end_layer = cuts[k + 1];
    for (int i = s.first_layer; i < s.end_layer; ++i) s.layer_names.push_back(profile.layers[i].name);
    s.devices = home.devices;
    s.recompute = home.recompute;
    plan.stages.push_back(std::move(s));
  }
  return plan;
}

}  // namespace pw::planner
