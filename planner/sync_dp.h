// Synchronous (GPipe / 1F1B / zero-bubble) partitioning and its cost model.
//
// Model (all per iteration = one mini-batch of m micro-batches of b samples):
// - The profile holds costs for profile.micro_batch samples; times and activation bytes scale
//   linearly to b samples (scale = b / profile.micro_batch), parameters do not.
// - Stages are contiguous ranges of the profile's layer order; p stages run on devices p-1..0
//   (stage s on device p-1-s), so the link joining stage s and s+1 is
//   level_between(p-1-s, p-2-s); on a homogeneous hierarchy this is the mirror image of
//   placing stage s on device s and costs the same.
// - Stage time t_s = F_s + B_s (+ F_s again with re-materialization). A cut at position c sends
//   every tensor produced before c and consumed at or after c (skip connections relayed), except
//   data-loading sources: x_c = latency + bytes / bandwidth per direction.
// - iteration = sum_s t_s + sum_c 2 x_c + (m - 1) * max(max_s t_s, max_c x_c)
//   (fill-drain: one micro-batch's latency through the pipeline plus m-1 bottleneck periods).
// - Memory of stage s (q = p - s stages from it to the end): persistent = parameter_bytes /
//   weight_bytes * optimizer total; in-flight = m (gpipe) or min(q, m) (1f1b, zb);
//   without re-materialization in-flight * stash; with it in-flight * input cut bytes + stash
//   (one micro-batch's working set).
//
// DP: over suffixes (k = first layer, q = stages left) with Pareto fronts of (max, sum) pairs,
// re-materialization chosen per stage; exact for the model above. Complexity
// O(P * n^2 * F) for P <= min(devices, n) stages and front size F, pruned exactly by the
// incumbent: a partial plan whose (m-1)*max + sum already reaches the best complete plan is
// dropped, and a stage's extension stops once (m-1) * its compute reaches it.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/cluster.h"
#include "models/profile.h"

namespace pw::planner {

struct SyncStage {
  int begin = 0, end = 0;  // layers [begin, end)
  bool recompute = false;
};

struct SyncConfig {
  int m = 1;                     // micro-batches
  int64_t micro_batch_size = 1;  // samples
  bool gpipe_memory = false;     // in-flight m (gpipe) instead of min(q, m)
  int recompute = -1;            // -1 auto, 0 off, 1 on
  int64_t memory_limit = 0;      // bytes per device
  double persistent_per_parameter_byte = 4.0;
};

struct SyncStageCost {
  double compute_s = 0, forward_s = 0, backward_s = 0, in_comm_s = 0, out_comm_s = 0;
  int64_t memory_bytes = 0, persistent_bytes = 0, activation_bytes = 0;
};

struct SyncEvaluation {
  bool fits = true;
  double iteration_s = 0, bottleneck_s = 0, busy_of_bottleneck_s = 0;
  int64_t peak_memory_bytes = 0;
  std::vector<SyncStageCost> stages;
};

class SyncModel {
 public:
  SyncModel(const models::Profile& p, const models::Cluster& c);
  // The cost of a given partition (re-evaluation of a plan, baselines).
  SyncEvaluation evaluate(const std::vector<SyncStage>& stages, const SyncConfig& cfg) const;
  // The optimal partition for cfg (empty when nothing fits).
  std::vector<SyncStage> optimize(const SyncConfig& cfg, double* best_iteration_s) const;
  // Smallest per-device memory any partition needs (recompute on, one micro-batch in flight
  // bound ignored: uses cfg's m and schedule).
  int64_t min_memory_needed(const SyncConfig& cfg) const;
  int n() const { return static_cast<int>(fwd_.size()) - 1; }
  int max_stages() const;

 private:
  double cut_s(int c, int q_left_of_cut, double scale) const;  // c in 1..n-1
  SyncStageCost stage(int a, int b, bool rec, int q, int p, const SyncConfig& cfg) const;
  const models::Cluster& cluster_;
  int64_t profile_batch_;
  std::vector<int64_t> fwd_, bwd_, stash_, param_, work_;  // prefix sums (size n+1)
  std::vector<int64_t> cut_bytes_;                         // size n+1 (0 at 0 and n)
};

}  // namespace pw::planner
