// Internal to the replicated DP (planner/replicated_dp.h): the Solver that fills the rows of
// every level, split by idea over replicated_dp.cc (the rows: solve_row, the constructor) and
// replicated_budgets.cc (the budgets: the single-stage bound, per-cell budgets, rows on demand,
// and run, which drives the attempt and walks the plan back). Hot helpers are inline here.
// Not part of the planner's interface; one Solver per call, used on one thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "planner/replicated_dp.h"
#include "planner/replicated_segment.h"

namespace pw::planner::replicated_internal {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
// Windows wider than this also get the memory clamp and a start at the guessed crossing (each
// a binary search; narrower windows are cheaper to walk).
constexpr size_t kCapMinWindow = 8;

struct Cell {
  double t = kNone;
  int k = -1;      // split state (-1: one stage, the base case)
  int mprev = -1;  // machine index of the prefix part A[i][k][mprev]
  int np = 0;      // machines of the last stage (or of the base case)
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class Solver {
 public:
  Solver(const CutStates& s, const std::vector<ReplicatedLevel>& levels, const ReplicatedOptions& o);

  // r_parent: replicas of the level-1 stage this level-0 segment belongs to (two-level corrected
  // model with memory: its bound depends on it); 1 otherwise.
  double ct(int level, int i, int j, int r_parent = 1) const {
    if (j < i) return kNone;
    // Level 0 and solved rows inline, the rest out of line: this runs once per candidate.
    if (level == 0) return segment_compute_s(s_, o_, i, j);
    if (!single_stage_ && solved_cap_[level - 1][i] >= row_cap(level - 1, 1) &&
        !(level == 1 && per_parent_ && r_parent > 1 && bound_[i]))
      return tables_[level][static_cast<size_t>(i) * n_ + j];
    return inner_cost(level, i, j, r_parent);
  }

  [[gnu::noinline]] double inner_cost(int level, int i, int j, int r_parent) const;

  // Whether ct(level, i, ., r') (level > 0) answers without solving a row.
  bool row_ready(int level, int i, int r_prime) const {
    if (single_stage_) return true;
    if (!(solved_cap_[level - 1][i] >= row_cap(level - 1, 1))) return false;
    return !(level == 1 && per_parent_ && r_prime > 1 && bound_[i]) ||
           rrows_cap_[r_prime - 1][i] >= row_cap(0, r_prime);
  }

  // Solves start row i of `level` (r_parent = 1) on first use and keeps its full-group column
  // (the next level's costs) and, at level 0, whether the memory check cut anything.
  void ensure_row(int level, int i) const;

  // Ring all-reduce of P bytes among r replicas on `level` (corrected model).
  double allreduce(int level, int r, double P) const {
    const double B = levels_[level].bandwidth, lat = levels_[level].latency_s;
    return r > 1 ? 2.0 * (r - 1) / r * P / B + 2.0 * (r - 1) * lat : 0.0;
  }

  // Corrected model: memory is checked where stages meet devices (level 0). Devices outside
  // this level-0 group all count as downstream, an upper bound for any group's position.
  // With r_parent replicas of the enclosing level-1 stage the devices downstream of a stage,
  // over all its r * r_parent replicas, are at most D - r_parent * (group devices before it).
  // A failing check sets *memory_bound (when given).
  bool corrected_mem_ok(int level, int r_parent, int i0, int j, int r, int from_here, bool* memory_bound) const {
    if (!o_.use_memory_constraint || level > 0) return true;
    const int M = levels_[0].machines;
    const double P = diff(s_.parameter_bytes, i0, j);
    const double act = diff(s_.stash_bytes, i0, j) * o_.activation_scale;
    const int64_t inflight =
        ceil_div(devices_ - static_cast<int64_t>(r_parent) * (M - from_here), static_cast<int64_t>(r) * r_parent);
    const bool ok = P * o_.persistent_per_parameter_byte + (inflight - 1) * P + inflight * act <= o_.memory_bytes;
    if (!ok && memory_bound) *memory_bound = true;
    return ok;
  }

  // The base case of solve_row: states [i, j] as one stage of r replicas on `level`, whose
  // cost one level down is C (ct); NaN when memory rules it out.
  double base_time(int level, int i, int j, int r, double C, int r_parent, bool* memory_bound) const {
    const int M = levels_[level].machines;
    const double B = levels_[level].bandwidth;
    const double P = diff(s_.parameter_bytes, i, j);
    if (o_.quirks) {
      const double w = level == 0 ? 1.0 : levels_[level - 1].machines;
      const double stash = static_cast<double>(ceil_div(M - r, r)) * (diff(s_.activation_bytes, i, j) + P);
      if (o_.use_memory_constraint && stash > o_.memory_bytes) return kNone;
      const double dp = 4.0 * (r - 1) * P / (B * r) / w;
      return (C + dp) / r;
    }
    if (!corrected_mem_ok(level, r_parent, i, j, r, M, memory_bound)) return kNone;
    double t = (C + allreduce(level, r, P)) / r;
    if (j < n_ - 1) t = std::max(t, (levels_[level].latency_s + s_.cut_bytes[j] * o_.activation_scale / B) / r);
    return t;
  }

  // Per-cell budgets of row i of an inner `level` (row budget `cap`; r_parent as in solve_row):
  // caps[j] for j >= i. Its cost T enters the level above as a stage of r replicas whose time is
  // at least (T + X_r) / r, X_r the stage's all-reduce there (the same operations as there);
  // that stage is of use only within the level above's budget Cu, so T <= Cu r - X_r for some
  // r the level above may give it: exactly r_parent (per-r_parent rows), at most M_up - 1 after
  // a split (the prefix keeps a machine), M_up as a row start (quirks: X_r / w there). On the
  // outermost level above, a row i > 0 is only ever a split's last stage, and the states before
  // i need machines too: at least compute(< i) * unit / Cu of them. The all-reduce only grows
  // with j along the DP's dependencies (a prefix state k of j has parameters(k) <= (j)), so a
  // cell that later cells read has a budget at least theirs. Relative slacks cover rounding.
  void cell_caps(int level, int i, int r_parent, double cap, std::vector<double>& caps) const;

  // Budget of a row of `level` (see run); a level-0 row solved for r_parent > 1 enters the
  // level above only as a stage of exactly r_parent replicas (time >= cost / r_parent).
  double row_cap(int level, int r_parent) const {
    if (o_.exhaustive_splits) return std::numeric_limits<double>::infinity();
    return r_parent > 1 ? cap_[1] * r_parent * (1 + 1e-9) : cap_[level];
  }
  double diff(const std::vector<int64_t>& v, int i, int j) const {
    return static_cast<double>(v[j] - (i == 0 ? 0 : v[i - 1]));
  }

  // Fills one start row of level `level`: A[j * M + m].
  std::vector<Cell> solve_row(int level, int i, int r_parent = 1, bool* memory_bound = nullptr) const;

  // The final cell's base case at the outermost level: every state as one stage on all
  // M machines, by the operations of solve_row's base case; +inf when that has no value.
  double final_base_case() const;

  // An upper bound on the optimum from a restricted DP (two or more levels, not straight): the
  // outermost level as usual, but every inner segment one stage on all machines of each level
  // below (its cost the base case, no inner row solved). Each cost is that of a plan the full DP
  // also prices (a base-case candidate of the inner rows' last column, same operations), so the
  // full DP's final value is at most this one; +inf when it finds no plan. Cheap: one row of
  // the outermost level with O(1) costs.
  double single_stage_bound();

  // Level 0: a lower bound on the last stage's time with r' = mp replicas, `dc` compute ns and
  // at least `dp` parameter bytes, by the same operations in the same order as the exact time
  // (floating point is monotone in each operand), so it is exact where dc, dp are.
  double last_lb(int64_t dc, int64_t dp, int mp, double B, double lat) const {
    const double P = static_cast<double>(dp);
    if (o_.quirks) return (static_cast<double>(dc) / 1e9 + 4.0 * (mp - 1) * P / (B * mp)) / mp;
    const double ar = mp > 1 ? 2.0 * (mp - 1) / mp * P / B + 2.0 * (mp - 1) * lat : 0.0;
    return (static_cast<double>(dc) * o_.time_scale + ar) / mp;
  }

  // The largest compute a split state may have when its prefix A[i][k][mc] must be <= t:
  // every state at a compute-order position >= p, p the first with sufmin > t, is slower.
  double prefix_cap(const std::vector<double>& sufmin, int mc, double t) const {
    const double* col = sufmin.data() + static_cast<size_t>(mc) * n_;
    const int p = static_cast<int>(std::partition_point(col, col + n_, [&](double v) { return v <= t; }) - col);
    if (p == n_) return std::numeric_limits<double>::infinity();
    if (p == 0) return -1.0;
    // Positions < p have compute <= order_compute_[p - 1]; when that is below position p's,
    // it separates the kept states exactly, else the tie keeps position p's compute too.
    return static_cast<double>(order_compute_[p - 1] < order_compute_[p] ? order_compute_[p - 1] : order_compute_[p]);
  }

  ReplicatedResult run();

 private:
  const CutStates& s_;
  const std::vector<ReplicatedLevel>& levels_;
  const ReplicatedOptions& o_;
  int n_;
  int64_t devices_ = 1;                                    // D: devices of the whole cluster
  mutable std::vector<std::unique_ptr<double[]>> tables_;  // [level][i * n + j]: rows solved so far
  mutable std::vector<std::vector<double>> solved_cap_;    // [level][i]: budget row i was solved under (NaN: not yet)
  std::vector<double> cap_;                                // per level: budget of a cell (see run)
  bool per_parent_ = false;            // two levels, corrected model with memory: level-1 costs per r_parent
  mutable bool single_stage_ = false;  // ct answers single-stage costs (single_stage_bound)
  mutable std::vector<char> bound_;    // per start row: the memory check cut something at r_parent = 1
  mutable std::vector<std::vector<std::vector<double>>> rrows_;  // [r_parent - 1][i]: see ct
  mutable std::vector<std::vector<double>> rrows_cap_;           // ... budget solved under
  std::vector<std::vector<int>> by_compute_;                     // per state: preds by (compute_ns, index)
  std::vector<std::vector<int64_t>> compute_of_;                 // their compute_ns, ascending
  std::vector<std::vector<int64_t>> pmax_of_;                    // running maximum of their parameter_bytes
  std::vector<double> units_;                                    // per level: seconds per profile ns per machine
  bool prefix_family_ = false;                                   // preds(j) = 0..j-1, also in compute order
  std::vector<int> order_;                                       // states by (compute_ns, index)
  std::vector<int64_t> order_compute_;                           // their compute_ns
};

}  // namespace pw::planner::replicated_internal
