// The replicated DP's budgets and driver (planner/replicated_solver.h): inner rows solved on
// demand (ensure_row, inner_cost), the per-cell budgets of inner rows, the single-stage bound,
// and run: one attempt under the budget G, then the plan walked back level by level.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "models/error.h"
#include "planner/replicated_solver.h"

namespace pw::planner::replicated_internal {

double Solver::inner_cost(int level, int i, int j, int r_parent) const {
  if (single_stage_) {
    // The bound pass (see single_stage_bound): the segment as one stage on every machine of
    // the level below, priced by that level's base case.
    const int below = level - 1, rp = per_parent_ && level == 1 ? r_parent : 1;
    const double C = ct(below, i, j, rp);
    return std::isnan(C) ? kNone : base_time(below, i, j, levels_[below].machines, C, rp, nullptr);
  }
  ensure_row(level - 1, i);
  if (level == 1 && per_parent_ && r_parent > 1 && bound_[i]) {
    // Solved on first use (the level-1 row runs on one thread): most are never asked for.
    std::vector<double>& row = rrows_[r_parent - 1][i];
    double& solved_cap = rrows_cap_[r_parent - 1][i];
    if (!(solved_cap >= row_cap(0, r_parent))) {
      solved_cap = row_cap(0, r_parent);
      const int M0 = levels_[0].machines;
      std::vector<Cell> cells = solve_row(0, i, r_parent);
      row.assign(n_, kNone);
      for (int q = i; q < n_; ++q) row[q] = cells[static_cast<size_t>(q) * M0 + M0 - 1].t;
    }
    return row[j];
  }
  return tables_[level][static_cast<size_t>(i) * n_ + j];
}

// Solves start row i of `level` (r_parent = 1) on first use and keeps its full-group column
// (the next level's costs) and, at level 0, whether the memory check cut anything.
void Solver::ensure_row(int level, int i) const {
  // A row solved under a budget at least the current one is exact within the current one.
  if (solved_cap_[level][i] >= row_cap(level, 1)) return;
  bool b = false;
  const int M = levels_[level].machines;
  std::vector<Cell> row = solve_row(level, i, 1, &b);
  double* next = tables_[level + 1].get();
  for (int j = i; j < n_; ++j) next[static_cast<size_t>(i) * n_ + j] = row[static_cast<size_t>(j) * M + M - 1].t;
  if (level == 0) bound_[i] = b;
  solved_cap_[level][i] = row_cap(level, 1);
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
void Solver::cell_caps(int level, int i, int r_parent, double cap, std::vector<double>& caps) const {
  const int up = level + 1, L = static_cast<int>(levels_.size());
  const int Mu = levels_[up].machines;
  const double Bu = levels_[up].bandwidth;
  const double Cu = cap_[up];
  caps.assign(n_, cap);
  if (!(Cu < std::numeric_limits<double>::infinity())) return;
  const bool start_only_split = up == L - 1 && i > 0;
  int rlo = 1, rhi = start_only_split ? Mu - 1 : Mu;
  if (start_only_split) {
    const double need = static_cast<double>(s_.compute_ns[i - 1]) * units_[up] / Cu * (1 - 1e-6);
    rhi = std::min(rhi, Mu - static_cast<int>(std::ceil(need)));
  }
  if (r_parent > 1) rlo = rhi = r_parent;
  if (rhi < rlo) {  // no machines left for this row: nothing in it is of use
    for (int j = i; j < n_; ++j) caps[j] = -1.0;
    return;
  }
  const double w = levels_[level].machines;
  for (int j = i; j < n_; ++j) {
    const double P = diff(s_.parameter_bytes, i, j);
    double best = -std::numeric_limits<double>::infinity();
    for (int r = rlo; r <= rhi; ++r) {
      double X;
      if (!o_.quirks) {
        X = allreduce(up, r, P);
      } else {
        const double split = 4.0 * (r - 1) * P / (Bu * r);
        X = start_only_split ? split : split / w;  // a row start may also be the base case
      }
      best = std::max(best, Cu * r * (1 + 2e-9) - X * (1 - 1e-9));
    }
    caps[j] = std::min(cap, best);
  }
}

// The final cell's base case at the outermost level: every state as one stage on all
// M machines, by the operations of solve_row's base case; +inf when that has no value.
double Solver::final_base_case() const {
  const int level = static_cast<int>(levels_.size()) - 1;
  const int M = levels_[level].machines;
  if (o_.straight && M > 1) return std::numeric_limits<double>::infinity();
  const double C = ct(level, 0, n_ - 1, M);
  if (std::isnan(C)) return std::numeric_limits<double>::infinity();
  const double t = base_time(level, 0, n_ - 1, M, C, 1, nullptr);
  return std::isnan(t) ? std::numeric_limits<double>::infinity() : t;
}

// An upper bound on the optimum from a restricted DP (two or more levels, not straight): the
// outermost level as usual, but every inner segment one stage on all machines of each level
// below (its cost the base case, no inner row solved). Each cost is that of a plan the full DP
// also prices (a base-case candidate of the inner rows' last column, same operations), so the
// full DP's final value is at most this one; +inf when it finds no plan. Cheap: one row of
// the outermost level with O(1) costs.
double Solver::single_stage_bound() {
  const int L = static_cast<int>(levels_.size());
  if (L < 2 || o_.straight) return std::numeric_limits<double>::infinity();
  single_stage_ = true;
  const std::vector<Cell> top = solve_row(L - 1, 0);
  single_stage_ = false;
  const double t = top[static_cast<size_t>(n_ - 1) * levels_[L - 1].machines + levels_[L - 1].machines - 1].t;
  return std::isnan(t) ? std::numeric_limits<double>::infinity() : t;
}

ReplicatedResult Solver::run() {
  ReplicatedResult res;
  const int L = static_cast<int>(levels_.size());
  tables_.clear();
  tables_.resize(L);
  // Inner levels' rows are solved on first use (ct): the level above asks only for the rows
  // its candidates need. With per-r_parent costs (two levels, corrected model, memory) a
  // memory-bound row is solved again per r_parent when first asked (ct): rows the memory
  // check never cut are the same for every r_parent (the bound only loosens as r_parent
  // grows, and a solve that performed no failing check takes the same path with a looser one).
  per_parent_ = L == 2 && !o_.quirks && o_.use_memory_constraint;
  solved_cap_.assign(L, std::vector<double>(n_, kNone));
  bound_.assign(n_, 0);
  // Left uninitialized: a row's entries are read only after ensure_row wrote them (j >= i).
  for (int level = 0; level + 1 < L; ++level) tables_[level + 1].reset(new double[static_cast<size_t>(n_) * n_]);
  if (per_parent_) {
    rrows_.assign(levels_[1].machines, std::vector<std::vector<double>>(n_));
    rrows_cap_.assign(levels_[1].machines, std::vector<double>(n_, kNone));
  }
  cap_.assign(L, std::numeric_limits<double>::infinity());
  const int M = levels_[L - 1].machines;
  std::vector<Cell> top;
  // One level under the corrected model has its memory test in the base case: no budget.
  if ((L > 1 || o_.quirks) && !o_.exhaustive_splits) {
    // Budgets. With a budget G for the final cell, a level-l cost C enters the level above as
    // a stage time >= C / r with r <= M_{l+1}, so a cell above G * M_{L-1} * ... * M_{l+1}
    // (with a relative slack for rounding) is part of no plan within G: when the optimum is
    // <= G the cells within budget come out exactly as without it (the final cell included)
    // and the others stay above budget or empty. Every value the budgeted DP finds is that
    // of a real plan (it only drops candidates), so a final value <= G proves the optimum
    // <= G and the result exact. G is the single-stage bound H (two or more levels; no inner
    // row is solved for it): near the optimum on the slow cases (nasnetalarge async 8x8:
    // 0.02783 vs 0.02782; gnmt_large pipedream 16x4 and nasnetalarge async 16x4: equal), so
    // it prunes almost every row the optimum does not need; then the whole model as one stage
    // on every outermost machine (U, a candidate of the final cell) when that is smaller, its
    // inner row solved under H's budgets. With no H (one level, or no single-stage plan), G = U.
    // (Round 2 climbed from the compute bound for PipeDream's model on two levels; G = H does
    // better on every case there: gnmt_large 16x4 6.4 s -> 0.9 s.)
    auto set_caps = [&](double G) {
      cap_[L - 1] = G * (1 + 1e-9);
      for (int level = L - 2; level >= 0; --level)
        cap_[level] = cap_[level + 1] * levels_[level + 1].machines * (1 + 1e-9);
    };
    const double H = single_stage_bound();
    res.single_stage_bound_s = H;
    double G = H;
    if (G < std::numeric_limits<double>::infinity()) set_caps(G);
    G = std::min(G, final_base_case());
    if (G < std::numeric_limits<double>::infinity()) {
      set_caps(G);
      top = solve_row(L - 1, 0);
      res.budget_s = G;
      // G is a plan's value, so this holds; should rounding ever break it, solve again
      // without budgets rather than return a plan not proven optimal.
      if (!(top[static_cast<size_t>(n_ - 1) * M + M - 1].t <= G)) {
        cap_.assign(L, std::numeric_limits<double>::infinity());
        top = solve_row(L - 1, 0);
        res.budget_s = 0;
      }
    }
  }
  if (top.empty()) top = solve_row(L - 1, 0);
  const Cell& ans = top[static_cast<size_t>(n_ - 1) * M + M - 1];
  if (std::isnan(ans.t)) return res;
  res.feasible = true;
  res.bottleneck_s = ans.t;
  // Walk back from the outermost level; bases = first devices of the spans a segment runs on.
  int64_t span = 1;
  for (const auto& l : levels_) span *= l.machines;
  std::ostringstream table;
  table.precision(17);
  struct Seg {
    int start, end;
    std::vector<int> bases;
    int reps = 1;
  };
  std::vector<Seg> segs{{0, n_, {0}, 1}};
  for (int level = L - 1; level >= 0; --level) {
    const int Ml = levels_[level].machines;
    int64_t gs = 1;
    for (int t = 0; t < level; ++t) gs *= levels_[t].machines;
    table << "Level " << level + 1 << "\n";
    std::vector<Seg> next;
    for (const Seg& seg : segs) {
      std::vector<Cell> row =
          level == L - 1 ? top : solve_row(level, seg.start, per_parent_ && bound_[seg.start] ? seg.reps : 1);
      // Collect (start, end, machines) back to front.
      std::vector<std::array<int, 3>> parts;
      int j = seg.end - 1, m = Ml - 1;
      while (true) {
        const Cell& c = row[static_cast<size_t>(j) * Ml + m];
        PW_CHECK(!std::isnan(c.t), "replicated DP reconstruction hit an empty cell");
        if (c.k < 0) {
          parts.push_back({seg.start, j + 1, c.np});
          break;
        }
        parts.push_back({c.k + 1, j + 1, c.np});
        j = c.k;
        m = c.mprev;
      }
      std::reverse(parts.begin(), parts.end());
      int machine = 0;
      for (const auto& pt : parts) {
        Seg child{pt[0], pt[1], {}, pt[2]};
        for (int b : seg.bases)
          for (int q = 0; q < pt[2]; ++q) child.bases.push_back(static_cast<int>(b + (machine + q) * gs));
        machine += pt[2];
        const double time =
            static_cast<double>(s_.compute_ns[pt[1] - 1] - (pt[0] == 0 ? 0 : s_.compute_ns[pt[0] - 1])) / 1e9;
        table << "(" << pt[0] << ", " << pt[1] << ") " << time << " " << pt[2] << "\n";
        next.push_back(std::move(child));
      }
    }
    segs = std::move(next);
  }
  for (Seg& seg : segs) {
    std::sort(seg.bases.begin(), seg.bases.end());
    res.stages.push_back({seg.start, seg.end, seg.bases});
  }
  res.table = table.str();
  return res;
}

}  // namespace pw::planner::replicated_internal
