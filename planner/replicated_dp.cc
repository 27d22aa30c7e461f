#include "planner/replicated_dp.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

#include "models/error.h"
#include "planner/replicated_segment.h"

namespace pw::planner {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
// Windows wider than this also get the prefix cap, the memory clamp and a start at the guessed
// crossing (each a binary search; narrower windows are cheaper to walk).
constexpr size_t kCapMinWindow = 8;

struct Cell {
  double t = kNone;
  int k = -1;      // split state (-1: one stage, the base case)
  int mprev = -1;  // machine index of the prefix part A[i][k][mprev]
  int np = 0;      // machines of the last stage (or of the base case)
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class Solver {
 public:
  Solver(const CutStates& s, const std::vector<ReplicatedLevel>& levels, const ReplicatedOptions& o)
      : s_(s), levels_(levels), o_(o), n_(s.num_states()) {
    // Per state j its predecessors ordered by (downset compute, index), for the split windows.
    by_compute_.resize(n_);
    compute_of_.resize(n_);
    pmax_of_.resize(n_);
    for (int j = 0; j < n_; ++j) {
      std::vector<int>& ks = by_compute_[j];
      ks = s_.preds[j];
      std::stable_sort(ks.begin(), ks.end(), [&](int a, int b) { return s_.compute_ns[a] < s_.compute_ns[b]; });
      compute_of_[j].reserve(ks.size());
      for (int k : ks) compute_of_[j].push_back(s_.compute_ns[k]);
      pmax_of_[j].reserve(ks.size());
      int64_t run = std::numeric_limits<int64_t>::min();
      for (int k : ks) pmax_of_[j].push_back(run = std::max(run, s_.parameter_bytes[k]));
    }
    prefix_family_ = true;
    for (int j = 0; j < n_ && prefix_family_; ++j) {
      prefix_family_ = static_cast<int>(s_.preds[j].size()) == j;
      for (int k = 0; k < j && prefix_family_; ++k) prefix_family_ = by_compute_[j][k] == k;
    }
    order_.resize(n_);
    for (int k = 0; k < n_; ++k) order_[k] = k;
    std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) { return s_.compute_ns[a] < s_.compute_ns[b]; });
    for (int k : order_) order_compute_.push_back(s_.compute_ns[k]);
    // Seconds per compute ns on one machine of each level (a level-l machine is G_l devices).
    double g = 1;
    for (const auto& l : levels_) {
      units_.push_back((o_.quirks ? 1e-9 : o_.time_scale) / g);
      g *= l.machines;
      devices_ *= l.machines;
    }
  }

  // r_parent: replicas of the level-1 stage this level-0 segment belongs to (two-level corrected
  // model with memory: its bound depends on it); 1 otherwise.
  double ct(int level, int i, int j, int r_parent = 1) const {
    if (j < i) return kNone;
    // Level 0 and solved rows inline, the rest out of line: this runs once per candidate.
    if (level == 0) return segment_compute_s(s_, o_, i, j);
    if (!single_stage_ && solved_cap_[level - 1][i] >= row_cap(level - 1, 1) && !(level == 1 && per_parent_ && r_parent > 1 && bound_[i]))
      return tables_[level][static_cast<size_t>(i) * n_ + j];
    return inner_cost(level, i, j, r_parent);
  }

  [[gnu::noinline]] double inner_cost(int level, int i, int j, int r_parent) const {
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

  // Whether ct(level, i, ., r') (level > 0) answers without solving a row.
  bool row_ready(int level, int i, int r_prime) const {
    if (single_stage_) return true;
    if (!(solved_cap_[level - 1][i] >= row_cap(level - 1, 1))) return false;
    return !(level == 1 && per_parent_ && r_prime > 1 && bound_[i]) || rrows_cap_[r_prime - 1][i] >= row_cap(0, r_prime);
  }

  // Solves start row i of `level` (r_parent = 1) on first use and keeps its full-group column
  // (the next level's costs) and, at level 0, whether the memory check cut anything.
  void ensure_row(int level, int i) const {
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
    const int64_t inflight = ceil_div(devices_ - static_cast<int64_t>(r_parent) * (M - from_here), static_cast<int64_t>(r) * r_parent);
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
  [[gnu::noinline]] void cell_caps(int level, int i, int r_parent, double cap, std::vector<double>& caps) const {
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
  std::vector<Cell> solve_row(int level, int i, int r_parent = 1, bool* memory_bound = nullptr) const {
    const int M = levels_[level].machines;
    const double B = levels_[level].bandwidth;
    const double lat = levels_[level].latency_s;
    std::vector<Cell> A(static_cast<size_t>(n_) * M);
    auto at = [&](int j, int m) -> Cell& { return A[static_cast<size_t>(j) * M + m]; };
    auto corrected_mem_ok_here = [&](int i0, int j, int r, int from_here) {
      return corrected_mem_ok(level, r_parent, i0, j, r, from_here, memory_bound);
    };
    for (int j = i; j < n_; ++j) {
      const int max_m = o_.straight ? 1 : M;
      for (int m = 0; m < max_m; ++m) {
        const int r = m + 1;
        const double C = ct(level, i, j, r);
        if (std::isnan(C)) continue;
        const double t = base_time(level, i, j, r, C, r_parent, memory_bound);
        if (!std::isnan(t)) at(j, m) = Cell{t, -1, -1, r};
      }
    }
    const double unit = units_[level];
    const int64_t base_comp = i == 0 ? 0 : s_.compute_ns[i - 1];
    // Budget of this level's cells (+inf: none): a cell above it is of no use to the level above
    // (see cap_), so candidates above it are not evaluated and cells whose compute bound exceeds
    // it are left with their base case.
    const double cap = row_cap(level, r_parent);
    const bool top = level == static_cast<int>(levels_.size()) - 1;
    // Inner levels: per state j the tighter budget of cell_caps (never above `cap`).
    std::vector<double> caps;
    if (!top && cap < std::numeric_limits<double>::infinity()) cell_caps(level, i, r_parent, cap, caps);
    // sufmin[m' * n + p]: the smallest A[i][k][m'] over the states k at positions >= p of the
    // compute order (empty cells count as +inf); column m' is final before any m > m' reads it.
    std::vector<double> sufmin(o_.exhaustive_splits ? 0 : static_cast<size_t>(n_) * M);
    auto build_sufmin = [&](int mc) {
      if (o_.exhaustive_splits) return;
      double run = std::numeric_limits<double>::infinity();
      for (int p = n_ - 1; p >= 0; --p) {
        const double v = at(order_[p], mc).t;
        if (!std::isnan(v) && v < run) run = v;
        sufmin[static_cast<size_t>(mc) * n_ + p] = run;
      }
    };
    build_sufmin(0);
    for (int m = 1; m < M; ++m) {
      // PipeDream starts j at i + 1, so a one-state segment never gets the "fewer machines"
      // option (a quirk); the corrected model gives it one.
      if (!o_.quirks && o_.fewer_machines) {
        const Cell& fewer = at(i, m - 1);
        Cell& cur = at(i, m);
        if (!std::isnan(fewer.t) && (std::isnan(cur.t) || fewer.t < cur.t)) cur = fewer;
      }
      for (int j = i + 1; j < n_; ++j) {
        const double capj = caps.empty() ? cap : caps[j];
        const bool capped = capj < std::numeric_limits<double>::infinity();
        // Every plan of (i..j] on m + 1 machines takes at least compute * unit / (m + 1).
        if (capped && static_cast<double>(s_.compute_ns[j] - base_comp) * unit > capj * (m + 1) * (1 + 1e-9)) continue;
        // Outermost level (one row, i = 0): the states after j need the other M - 1 - m machines,
        // at least their compute * unit / (M - 1 - m) (none left: no plan through this cell).
        if (capped && top && j < n_ - 1 &&
            (m == M - 1 || static_cast<double>(s_.compute_ns[n_ - 1] - s_.compute_ns[j]) * unit > cap * (M - 1 - m) * (1 + 1e-9)))
          continue;
        // Without "fewer machines" the final cell reads no other cell of the last state.
        if (top && !o_.exhaustive_splits && !o_.fewer_machines && j == n_ - 1 && m < M - 1) continue;
        Cell best = at(j, m);
        if (o_.fewer_machines && m > 0) {
          const Cell& fewer = at(j, m - 1);
          if (!std::isnan(fewer.t) && (std::isnan(best.t) || fewer.t < best.t)) best = fewer;
        }
        // Candidates (k, mp) in any order, keeping the one PipeDream's loop keeps: the smallest
        // time, ties to the smallest k, then the smallest mp (after the base/fewer incumbent).
        bool from_loop = false;
        // thr: the incumbent or the budget, whichever is smaller (+inf with neither): a candidate
        // whose lower bound exceeds it cannot be kept or is of no use.
        double thr = capj;
        auto update_thr = [&] { thr = std::isnan(best.t) ? capj : std::min(best.t, capj); };
        update_thr();
        auto better = [&](double t, int k, int mp) {
          if (std::isnan(best.t) || t < best.t) return true;
          if (t > best.t || !from_loop) return false;
          return k < best.k || (k == best.k && mp < best.np);
        };
        const double out_j = o_.quirks ? static_cast<double>(s_.out_bytes[j]) : s_.cut_bytes[j] * o_.activation_scale;
        const bool has_out = j < n_ - 1;
        const std::vector<int>& ks = by_compute_[j];
        const std::vector<int64_t>& cs = compute_of_[j];
        const int max_mp = o_.straight ? 1 : m;
        for (int mp = 1; mp <= max_mp; ++mp) {
          // Lower bounds (the mediant inequality, level by level): the prefix on m + 1 - mp
          // machines takes at least compute(i..k) * unit / (m + 1 - mp), the last stage at least
          // compute(k+1..j) * unit / mp; a split whose bound exceeds the incumbent (with a
          // relative slack for rounding) cannot be kept, so only a window of k is visited.
          // Transfer bound of the last stage: its output (quirks: 2 out_j / (B r'); corrected:
          // the latencies and out_j / B, shared by r' replicas) must fit in the incumbent.
          if (thr < std::numeric_limits<double>::infinity() && !o_.exhaustive_splits) {
            const double comm_lb = o_.quirks ? (o_.activation_comm && has_out ? 2.0 * out_j / (B * mp) : 0.0)
                                             : (lat + (has_out ? lat + out_j / B : 0.0)) / mp;
            if (comm_lb > thr * (1 + 1e-9)) continue;
          }
          const int mprev = m - mp;
          const double Bmp = B * mp;
          const double out_j_term = has_out ? 2.0 * out_j / Bmp : 0.0;  // quirks: the output transfer
          // Compute range [lo_c, hi_c] a split k must lie in to beat the incumbent: the last
          // stage's bound from below, from above the smaller of the prefix's compute bound and
          // the prefix cap (every state past it has A[i][.][mprev] > incumbent: suffix minima).
          double lo_c = -std::numeric_limits<double>::infinity(), hi_c = std::numeric_limits<double>::infinity();
          bool use_cap = false;  // the prefix cap costs a search: only for wide windows
          auto set_bounds = [&] {
            if (o_.exhaustive_splits) return;
            if (!(thr < std::numeric_limits<double>::infinity())) {  // no bound: only the states with no feasible prefix go
              if (use_cap) hi_c = prefix_cap(sufmin, mprev, std::numeric_limits<double>::max());
              return;
            }
            const double lim = thr * (1 + 1e-9) / unit;
            hi_c = static_cast<double>(base_comp) + lim * (m + 1 - mp);
            if (use_cap) hi_c = std::min(hi_c, prefix_cap(sufmin, mprev, thr));
            lo_c = static_cast<double>(s_.compute_ns[j]) - lim * mp;
          };
          set_bounds();
          if (hi_c < lo_c) continue;
          // Prefix states: the predecessors of j are 0..j-1 in this order, and A[i][k] needs k >= i.
          const size_t first = prefix_family_ && !o_.exhaustive_splits ? static_cast<size_t>(i) : 0;
          size_t lo = static_cast<size_t>(std::partition_point(cs.begin() + first, cs.end(), [&](int64_t c) { return static_cast<double>(c) < lo_c; }) - cs.begin());
          size_t hi = static_cast<size_t>(std::partition_point(cs.begin() + lo, cs.end(), [&](int64_t c) { return static_cast<double>(c) <= hi_c; }) - cs.begin());
          if (lo >= hi) continue;
          if (hi - lo > kCapMinWindow && !o_.exhaustive_splits) {
            use_cap = true;
            set_bounds();
            hi = static_cast<size_t>(std::partition_point(cs.begin() + lo, cs.begin() + hi, [&](int64_t c) { return static_cast<double>(c) <= hi_c; }) - cs.begin());
            if (lo >= hi) continue;
            // Prefix states, corrected model: the last stage (k, j] shrinks as k grows, so its
            // memory check fails exactly below some k (a monotone test in floating point too).
            if (!o_.quirks && o_.use_memory_constraint && level == 0 && prefix_family_) {
              const int fh = M - (m + 1) + mp;
              lo = static_cast<size_t>(std::partition_point(ks.begin() + lo, ks.begin() + hi, [&](int k) {
                     return !corrected_mem_ok_here(k + 1, j, mp, fh);
                   }) - ks.begin());
              if (lo >= hi) continue;
            }
          }
          auto consider = [&](size_t q) __attribute__((always_inline)) {
            const int k = ks[q];
            if (k < i) return;  // A[i][k] exists only for k >= i
            if (i > 0 && s_.pred_set[i - 1].test(k)) return;
            const Cell& prev = at(k, mprev);
            if (std::isnan(prev.t)) return;
            // A candidate wins only if it is faster, or as fast with a smaller (k, r') after
            // another split (after the base/fewer incumbent, never). Each lower bound lb below
            // is exact in floating point (t = max(prev, ...) >= each term): lb > best loses,
            // and lb == best loses when a tie cannot win.
            const bool prunable = thr < std::numeric_limits<double>::infinity() && !o_.exhaustive_splits;
            const bool tie_loses = !from_loop || k > best.k || (k == best.k && mp >= best.np);
            auto loses = [&](double lb) { return prunable && (lb > thr || (tie_loses && lb == best.t)); };
            if (prev.t > thr) return;
            if (loses(prev.t)) return;
            const double out_k = o_.quirks ? static_cast<double>(s_.out_bytes[k]) : s_.cut_bytes[k] * o_.activation_scale;
            if (o_.quirks && o_.activation_comm && loses(std::max(2.0 * out_k / Bmp, out_j_term))) return;
            // Corrected model: the transfers (the same operations as in t below).
            auto transfers = [&] { return ((lat + out_k / B) + (has_out ? lat + out_j / B : 0.0)) / mp; };
            double comm = kNone;
            // Inner levels, before the cost of the last stage solves a row of the level below:
            // the transfers, and the last stage's time with its all-reduce, its cost bounded below
            // by the compute bound (a level-l cost is >= compute * unit_l: every plan below spreads
            // that compute over at most the group's devices; the factor 1 - 1e-9 covers rounding),
            // by the operations of t below (monotone in the cost), so both bound t exactly. Rows
            // already solved skip them (their cost is the cheaper test).
            if (level > 0 && prunable && !row_ready(level, k + 1, mp)) {
              if (!o_.quirks) {
                comm = transfers();
                if (loses(comm)) return;
              }
              const double Pl = diff(s_.parameter_bytes, k + 1, j);
              const double clb = static_cast<double>(s_.compute_ns[j] - s_.compute_ns[k]) * unit * (1 - 1e-9);
              if (loses(o_.quirks ? (clb + 4.0 * (mp - 1) * Pl / Bmp) / mp : (clb + allreduce(level, mp, Pl)) / mp)) return;
            }
            // Level 1 under per-r_parent costs: the cost with r_parent = r' itself (no cheaper
            // bound is known without solving that row); else the one cost.
            const bool by_parent = per_parent_ && level == 1;
            const double Cl = by_parent ? kNone : ct(level, k + 1, j, m);
            const double Cm = by_parent ? ct(level, k + 1, j, mp) : Cl;
            if (std::isnan(Cm)) return;
            // The last stage takes at least Cm / r' (exact in floating point too).
            if (Cm / mp > thr) return;
            if (loses(Cm / mp)) return;
            const double Pl = diff(s_.parameter_bytes, k + 1, j);
            double t;
            if (o_.quirks) {
              const double stash = (diff(s_.activation_bytes, k + 1, j) + Pl) *
                                   static_cast<double>(ceil_div(M - (m + 1), mp));
              if (o_.use_memory_constraint && stash > o_.memory_bytes) return;
              const double last = (Cl + 4.0 * (mp - 1) * Pl / Bmp) / mp;
              t = std::max(prev.t, last);
              if (o_.activation_comm) {
                t = std::max(t, 2.0 * out_k / Bmp);
                if (has_out) t = std::max(t, out_j_term);
              }
            } else {
              if (!corrected_mem_ok_here(k + 1, j, mp, M - (m + 1) + mp)) return;
              if (std::isnan(comm)) comm = transfers();
              const double last = std::max((Cm + allreduce(level, mp, Pl)) / mp, comm);
              t = std::max(prev.t, last);
            }
            if (better(t, k, mp)) {
              const bool tighter = std::isnan(best.t) || t < best.t;
              best = Cell{t, k, mprev, mp};
              from_loop = true;
              update_thr();
              if (tighter) set_bounds();
            }
          };
          if (o_.exhaustive_splits) {
            for (size_t q = lo; q < hi; ++q) consider(q);
            continue;
          }
          // Start where the prefix's time meets the last stage's compute bound (a guess at the
          // best split, so the incumbent tightens early), then walk outwards in both directions;
          // each walk stops at the bound on its side, which shrinks as the incumbent improves.
          size_t q0 = !use_cap ? lo : static_cast<size_t>(std::partition_point(ks.begin() + lo, ks.begin() + hi, [&](int k) {
                        const double pt = at(k, mprev).t;
                        const double lb = level == 0 ? last_lb(s_.compute_ns[j] - s_.compute_ns[k], s_.parameter_bytes[j] - s_.parameter_bytes[k], mp, B, lat)
                                                     : static_cast<double>(s_.compute_ns[j] - s_.compute_ns[k]) * unit / mp;
                        return !(pt >= lb);
                      }) - ks.begin());
          if (q0 == hi) --q0;
          for (size_t q = q0; q < hi; ++q) {
            if (static_cast<double>(cs[q]) > hi_c) break;
            consider(q);
          }
          const std::vector<int64_t>& pm = pmax_of_[j];
          for (size_t q = q0; q-- > lo;) {
            if (static_cast<double>(cs[q]) < lo_c) break;
            // Every split at or below q leaves the last stage at least compute_j - cs[q] and
            // parameters_j - pm[q] (pm: the running maximum): its exact time bounds them all.
            if (level == 0 && thr < std::numeric_limits<double>::infinity() &&
                last_lb(s_.compute_ns[j] - cs[q], s_.parameter_bytes[j] - pm[q], mp, B, lat) > thr)
              break;
            consider(q);
          }
        }
        at(j, m) = best;
      }
      build_sufmin(m);
    }
    return A;
  }

  // The final cell's base case at the outermost level: every state as one stage on all
  // M machines, by the operations of solve_row's base case; +inf when that has no value.
  double final_base_case() const {
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
  double single_stage_bound() {
    const int L = static_cast<int>(levels_.size());
    if (L < 2 || o_.straight) return std::numeric_limits<double>::infinity();
    single_stage_ = true;
    const std::vector<Cell> top = solve_row(L - 1, 0);
    single_stage_ = false;
    const double t = top[static_cast<size_t>(n_ - 1) * levels_[L - 1].machines + levels_[L - 1].machines - 1].t;
    return std::isnan(t) ? std::numeric_limits<double>::infinity() : t;
  }

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

  ReplicatedResult run() {
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
        for (int level = L - 2; level >= 0; --level) cap_[level] = cap_[level + 1] * levels_[level + 1].machines * (1 + 1e-9);
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
    struct Seg { int start, end; std::vector<int> bases; int reps = 1; };
    std::vector<Seg> segs{{0, n_, {0}, 1}};
    for (int level = L - 1; level >= 0; --level) {
      const int Ml = levels_[level].machines;
      int64_t gs = 1;
      for (int t = 0; t < level; ++t) gs *= levels_[t].machines;
      table << "Level " << level + 1 << "\n";
      std::vector<Seg> next;
      for (const Seg& seg : segs) {
        std::vector<Cell> row = level == L - 1 ? top : solve_row(level, seg.start, per_parent_ && bound_[seg.start] ? seg.reps : 1);
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
          const double time = static_cast<double>(s_.compute_ns[pt[1] - 1] - (pt[0] == 0 ? 0 : s_.compute_ns[pt[0] - 1])) / 1e9;
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

 private:
  const CutStates& s_;
  const std::vector<ReplicatedLevel>& levels_;
  const ReplicatedOptions& o_;
  int n_;
  int64_t devices_ = 1;  // D: devices of the whole cluster
  mutable std::vector<std::unique_ptr<double[]>> tables_;  // [level][i * n + j]: rows solved so far
  mutable std::vector<std::vector<double>> solved_cap_;  // [level][i]: budget row i was solved under (NaN: not yet)
  std::vector<double> cap_;                          // per level: budget of a cell (see run)
  bool per_parent_ = false;
  mutable bool single_stage_ = false;  // ct answers single-stage costs (single_stage_bound)  // two levels, corrected model with memory: level-1 costs per r_parent
  mutable std::vector<char> bound_;  // per start row: the memory check cut something at r_parent = 1
  mutable std::vector<std::vector<std::vector<double>>> rrows_;  // [r_parent - 1][i]: see ct
  mutable std::vector<std::vector<double>> rrows_cap_;           // ... budget solved under
  std::vector<std::vector<int>> by_compute_;      // per state: preds by (compute_ns, index)
  std::vector<std::vector<int64_t>> compute_of_;  // their compute_ns, ascending
  std::vector<std::vector<int64_t>> pmax_of_;     // running maximum of their parameter_bytes
  std::vector<double> units_;                     // per level: seconds per profile ns per machine
  bool prefix_family_ = false;                    // preds(j) = 0..j-1, also in compute order
  std::vector<int> order_;                        // states by (compute_ns, index)
  std::vector<int64_t> order_compute_;            // their compute_ns
};

}  // namespace

ReplicatedResult replicated_partition(const CutStates& s, const std::vector<ReplicatedLevel>& levels,
                                      const ReplicatedOptions& o) {
  PW_CHECK(s.complete && s.num_states() > 0, "replicated_partition needs a complete state set");
  PW_CHECK(!levels.empty(), "replicated_partition needs at least one level");
  for (const auto& l : levels)
    if (l.machines < 1 || !(l.bandwidth > 0)) throw InputError("levels: expected machines >= 1 and bandwidth > 0");
  Solver solver(s, levels, o);
  return solver.run();
}

}  // namespace pw::planner
