// Synchronous (GPipe / 1F1B / zero-bubble) partitioning and its cost model.
//
// Model (all per iteration = one mini-batch of m micro-batches of b samples):
// - The profile holds costs for profile.micro_batch samples; times and activation bytes scale
//   linearly to b samples (scale = b / profile.micro_batch), parameters do not.
// - Stages are contiguous ranges of the profile's layer order, each beginning at a layer where
//   models::stage_starts_allowed allows one (where the model carries module paths); p stages run on devices p-1..0
//   (stage s on device p-1-s), so the link joining stage s and s+1 is
//   level_between(p-1-s, p-2-s); on a homogeneous hierarchy this is the mirror image of
//   placing stage s on device s and costs the same.
// - Stage time t_s = F_s + B_s (+ F_s again with re-materialization). A cut at position c sends
//   every tensor produced before c and consumed at or after c (skip connections relayed), except
//   data-loading sources: x_c = latency + bytes / bandwidth per direction.
// - iteration = sum_s t_s + sum_c 2 x_c + (m - 1) * max(max_s t_s, max_c x_c)
//   (fill-drain: one micro-batch's latency through the pipeline plus m-1 bottleneck periods).
// - Memory of stage s (q = p - s stages from it to the end): persistent = parameter_bytes /
//   weight_bytes * optimizer total; plus the largest workspace of its layers (held while an op
//   runs); plus activations as the simulator counts them for the schedule's op order
//   (sim/engine.h): kept = m (gpipe), min(q, m) (1f1b) or min(p, m) (zb-h1: stage s = p - q
//   delays W(j) until after B(j + s), so every stage holds p micro-batches from F to W);
//   without re-materialization kept * stash; with it kept * input bytes (every tensor crossing
//   into the stage, data-loading outputs included) + reforward * stash, reforward = 1 (gpipe,
//   1f1b: B and W are one op) or min(s + 1, m) (zb-h1: the re-forward's stash lives from B(j)
//   to W(j)). In optimize() the number of stages p of zb-h1 is not known while a stage is
//   costed, so the DP bounds it by max_stages() (an upper bound; evaluate() uses the real p).
//
// Optimizer (exact for the model above). Write S = sum_s t_s + sum_c 2 x_c and
// M = max(max_s t_s, max_c x_c), so iteration = S + (m-1) M; sum_s t_s is the total compute plus
// the re-forward of re-materialized stages. For a bottleneck bound X, g(X) = min S over
// partitions with M <= X is a DP over (first layer k, stage class c), k from n-1 down to 0:
//   G(k, c) = min over the next cut j of [extra(k, j) + 2 x_c(j) + G(j, prev(c))].
// A stage's cost depends on q (stages from it to the end) only through its in-flight count
// min(q, m) (gpipe: m) and the link level after it (periodic in q with the inner group size g),
// so stages with q >= q0 (= m; gpipe 1) are grouped into g classes by (q - q0) mod g: m + g
// classes instead of P = min(devices, n) exact stage counts. The grouping drops the limit of P
// stages; when the grouped optimum has more than P stages the bound is solved again with the P
// exact classes. A stage is allowed when its time and cuts are <= X and it fits in memory;
// without re-materialization extra = 0 and the allowed j form a window (k, J(k)] whose ends
// only move left as k falls (times and memory grow with the stage): a monotone-deque sliding
// minimum, O(1) amortized per cell. Re-materialized stages (needed only past J(k), when memory
// ended the window) are a range minimum over a sparse table filled as positions are finished,
// with the window end found by galloping search. One evaluation is O(n C) time and memory,
// O(n C log n) when re-materialization can help, C = m + g classes (P when exact).
// g is non-increasing in X, so the optimum is searched over X by interval bisection with the
// exact bound: every partition whose M lies in (lo, hi] has S >= g(hi), so the interval is
// dropped once g(hi) + (m-1) lo reaches the incumbent; a probe at X also yields a real
// partition (its M <= X) that may become the incumbent, and partitions with M between that
// partition's M and X cannot beat it. The lower end starts at max(slowest layer, total / P).
// Measured: 1-200 evaluations per micro-batch count (bench/RESULTS.md, "Planner").
// Thread-safety: const members may run concurrently except optimize(), which records
// last_evaluations().
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
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
  bool zb_memory = false;        // zb-h1 orders (planner/schedule_gen.cc): see the header comment
  int recompute = -1;            // -1 auto, 0 off, 1 on
  int64_t memory_limit = 0;      // bytes per device
  double persistent_per_parameter_byte = 4.0;
  bool exact_stage_classes = false;  // skip the grouped relaxation (tests compare the two)
};

struct SyncStageCost {
  double compute_s = 0, forward_s = 0, backward_s = 0, in_comm_s = 0, out_comm_s = 0;
  int64_t memory_bytes = 0, persistent_bytes = 0, activation_bytes = 0;  // activation includes working
  int64_t working_bytes = 0;
};

struct SyncEvaluation {
  bool fits = true;
  double iteration_s = 0, bottleneck_s = 0, busy_of_bottleneck_s = 0;
  // Busy time of stage 0, the stage whose span is the whole fill-drain iteration in the closed
  // form (DESIGN.md: bubble_rate = (cost - busy of the longest-span stage) / cost).
  double busy_of_first_stage_s = 0;
  int64_t peak_memory_bytes = 0;
  std::vector<SyncStageCost> stages;
};

// The smallest memory limit in bytes for which `fits` holds (`fits` must be monotone: true at a
// limit, true at every larger one), below `below`; -1 when it holds at no limit below `below`
// and up to kMaxFittingLimit bytes. Found by bracketing from `guess` (doubling up from it, or halving down
// while it holds), then bisecting: the answer does not depend on the guess, the number of calls
// of `fits` does (about log2(answer / guess) + log2(answer) for a guess below the answer). With
// `below`, one call settles a limit that is not below it.
inline constexpr int64_t kMaxFittingLimit = int64_t{1} << 61;
int64_t smallest_fitting_limit(const std::function<bool(int64_t)>& fits, int64_t guess = 1,
                               int64_t below = std::numeric_limits<int64_t>::max());

// ceil(x) as an integer, for the byte counts of the cost model (x >= 0; std::ceil outside
// [0, 2^62)): the same value as static_cast<int64_t>(std::ceil(x)) without the library call,
// which baseline x86-64 cannot inline and which showed up in the planner's profile.
inline int64_t ceil_bytes(double x) {
  if (!(x >= 0 && x < 0x1p62)) return static_cast<int64_t>(std::ceil(x));
  const auto t = static_cast<int64_t>(x);
  return t + (static_cast<double>(t) < x ? 1 : 0);
}

class SyncModel {
 public:
  SyncModel(const models::Profile& p, const models::Cluster& c);
  // The cost of a given partition (re-evaluation of a plan, baselines).
  SyncEvaluation evaluate(const std::vector<SyncStage>& stages, const SyncConfig& cfg) const;
  // The optimal partition for cfg (empty when nothing fits).
  std::vector<SyncStage> optimize(const SyncConfig& cfg, double* best_iteration_s) const;
  // Smallest per-device memory limit under which some partition fits (cfg's m, schedule and
  // re-materialization mode; cfg.memory_limit ignored); -1 when none fits under 2^60 bytes, or
  // none under `below` (a caller after the least over several configurations passes the least
  // so far: a configuration that cannot beat it costs one DP).
  int64_t min_memory_needed(const SyncConfig& cfg, int64_t below = std::numeric_limits<int64_t>::max()) const;
  // A lower bound of min_memory_needed(cfg), for its search: the stage holding a layer holds at
  // least its persistent bytes and workspace, and some stage at least 1/P of all persistent bytes.
  int64_t memory_floor(const SyncConfig& cfg) const;
  // Number of threshold-DP evaluations made by the last optimize() call (for benchmarks).
  int last_evaluations() const { return last_evaluations_; }
  int n() const { return static_cast<int>(fwd_.size()) - 1; }
  int max_stages() const;
  // Whether some layer may not begin a stage (models::stage_starts_allowed): the DP then cuts
  // only where one may.
  bool restricted_starts() const { return restricted_; }

 private:
  friend class UniformSync;  // the fast solver for repeated layers prices stages with stage()
  struct Solved;
  static Solved& thread_scratch();                             // this thread's Solved, reused between calls
  double cut_s(int c, int q_left_of_cut, double scale) const;  // c in 1..n-1
  SyncStageCost stage(int a, int b, bool rec, int q, int p, const SyncConfig& cfg) const;
  // Threshold DP: min S over partitions with every stage time and cut <= bound.
  // exact = false first solves the relaxation where stages left q >= q0 are grouped into
  // classes by q mod period_ (no stage-count limit) and falls back to exact when it needs
  // more than max_stages() stages.
  bool solve(const SyncConfig& cfg, double bound, Solved& out, bool exact) const;
  double cut_level_s(int c, int level, double scale) const;
  const models::Cluster& cluster_;
  int64_t profile_batch_;
  std::vector<int64_t> fwd_, bwd_, stash_, param_, work_;  // prefix sums (size n+1)
  std::vector<int64_t> pending_;                           // prefix sums of weight_pending_bytes (held B..W in zb-h1)
  std::vector<int64_t> cut_bytes_;                         // size n+1 (0 at 0 and n)
  std::vector<int64_t> in_bytes_;               // size n+1: bytes crossing cut c, data-loading outputs included
  std::vector<int64_t> load_;                   // prefix sums of data-loading output bytes (stage 0's input)
  std::vector<std::vector<int64_t>> work_max_;  // sparse table: max workspace over [i, i + 2^l)
  int64_t work_range(int a, int b) const;       // max workspace of layers [a, b)
  int64_t input_bytes(int a, int b) const { return a == 0 ? load_[b] : in_bytes_[a]; }
  int period_ = 1;            // link level after a stage repeats with this period in q
  std::vector<bool> starts_;  // per layer: a stage may begin there (models::stage_starts_allowed)
  bool restricted_ = false;
  mutable int last_evaluations_ = 0;
};

}  // namespace pw::planner
