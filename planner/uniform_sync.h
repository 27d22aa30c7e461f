// A fast exact solver of the synchronous partitioning (planner/sync_dp.h) for models made of a
// run of identical layers between a short head and a short tail (a GPT's transformer blocks
// between its embedding and its LM head): the same cost model and objective as
// SyncModel::optimize, solved by arithmetic over the repeated layer instead of a DP over every
// position, so that thousands of layers on thousands of devices plan in milliseconds.
//
// When it applies (decided from the inputs alone, never by a flag):
// - the profile has a run of R >= 2 consecutive layers with identical costs (times, bytes,
//   parameters, workspace; none a data-loading source) and every cut strictly inside the run
//   sends the same bytes (a chain: no tensor skips over a layer of the run); head (before the
//   run) and tail (after it) together hold at most kMaxEnds layers;
// - every layer may begin a stage (no module paths restrict the cuts: models::stage_starts_allowed);
// - the configuration is gpipe or 1f1b memory (not zb-h1, whose held counts depend on the stage
//   index) and re-materialization is "on" or "off", or "auto" where the DP would never
//   re-materialize (every stage fits without it: the DP's own shortcut).
// Elsewhere applies() is false and the caller runs the DP.
//
// Method. A partition is a set of cuts in the head, a set of cuts in the tail (at most 2^kMaxEnds
// combinations) and n_mid >= 1 stages over the run, the first also holding the rest of the head
// and the last the rest of the tail, each with >= 1 repeated layer. With re-materialization
// fixed, the sum of stage times is the same for every partition, and the cuts inside the run all
// send the same bytes, so S (the fill-drain latency) depends only on (combination, p) and the
// bottleneck M is minimized by a binary search on the per-stage time bound: a stage with q stages
// after it takes at most min(memory cap at its in-flight count, time cap) repeated layers, and
// the caps of the stages must add up to R. Candidates (combination, p) are evaluated in the order
// of a lower bound on S + (m-1) M and the search stops when the bound reaches the incumbent.
// Among partitions of equal cost the one with the smallest cut positions (lexicographically) is
// returned, the rule SyncModel's DP follows in exact arithmetic; the DP's floating-point sums can
// break such exact ties the other way, so tests compare costs, stage counts and fits there, and
// splits where the optimum is unique.
//
// Thread-safety: const members are safe to call concurrently.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "models/profile.h"
#include "planner/sync_dp.h"

namespace pw::planner {

// The longest run [begin, end) of consecutive identical layers (see above), when it is at least
// 2 long and the layers outside it number at most kMaxEnds; nullopt otherwise.
struct UniformRun {
  int begin = 0, end = 0;
  int length() const { return end - begin; }
};
constexpr int kMaxEnds = 10;
std::optional<UniformRun> find_uniform_run(const models::Profile& p);

class UniformSync {
 public:
  // `model` must outlive this object and be built from `profile`.
  UniformSync(const SyncModel& model, UniformRun run);
  // Whether optimize()/min_memory_needed() give the DP's answer for cfg (see the header comment).
  bool applies(const SyncConfig& cfg) const;
  // Same contract as SyncModel::optimize: the optimal partition, or empty when nothing fits or
  // nothing beats *best_iteration_s (then unchanged).
  std::vector<SyncStage> optimize(const SyncConfig& cfg, double* best_iteration_s) const;
  // Same contract as SyncModel::min_memory_needed, where applies_min_memory(cfg): re-materialization
  // "on" or "off" ("auto" changes with the limit searched).
  bool applies_min_memory(const SyncConfig& cfg) const;
  int64_t min_memory_needed(const SyncConfig& cfg, int64_t below = std::numeric_limits<int64_t>::max()) const;

 private:
  struct Setup;
  struct Combo;
  bool feasible_at_limit(const SyncConfig& cfg) const;
  bool any_fits(const Setup& su, const std::vector<Combo>& combos) const;  // time unbounded
  const SyncModel& m_;
  UniformRun run_;
  bool interior_uniform_ = false;
};

}  // namespace pw::planner
