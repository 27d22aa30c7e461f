#include "planner/replicated_dp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "models/error.h"
#include "planner/replicated_solver.h"

namespace pw::planner {
namespace replicated_internal {

Solver::Solver(const CutStates& s, const std::vector<ReplicatedLevel>& levels, const ReplicatedOptions& o)
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

// Fills one start row of level `level`: A[j * M + m].
std::vector<Cell> Solver::solve_row(int level, int i, int r_parent, bool* memory_bound) const {
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
          (m == M - 1 ||
           static_cast<double>(s_.compute_ns[n_ - 1] - s_.compute_ns[j]) * unit > cap * (M - 1 - m) * (1 + 1e-9)))
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
        // The prefix cap is applied before the searches: it costs one search over all states,
        // and it empties many windows outright and narrows most others (the scale benchmarks:
        // gnmt_large 16x4 1.20 s -> 0.97 s, the sum of all cases 3% less).
        auto set_bounds = [&] {
          if (o_.exhaustive_splits) return;
          // No incumbent and no budget: no cap either. A prefix cell worth +inf (a transfer
          // over a vanishing bandwidth) is a plan the loop may keep, and the suffix minima
          // cannot tell it from an empty cell.
          if (!(thr < std::numeric_limits<double>::infinity())) return;
          const double lim = thr * (1 + 1e-9) / unit;
          hi_c = std::min(static_cast<double>(base_comp) + lim * (m + 1 - mp), prefix_cap(sufmin, mprev, thr));
          lo_c = static_cast<double>(s_.compute_ns[j]) - lim * mp;
        };
        set_bounds();
        if (hi_c < lo_c) continue;
        // Prefix states: the predecessors of j are 0..j-1 in this order, and A[i][k] needs k >= i.
        const size_t first = prefix_family_ && !o_.exhaustive_splits ? static_cast<size_t>(i) : 0;
        size_t lo = static_cast<size_t>(std::partition_point(cs.begin() + first, cs.end(),
                                                             [&](int64_t c) { return static_cast<double>(c) < lo_c; }) -
                                        cs.begin());
        const size_t hi = static_cast<size_t>(
            std::partition_point(cs.begin() + lo, cs.end(), [&](int64_t c) { return static_cast<double>(c) <= hi_c; }) -
            cs.begin());
        if (lo >= hi) continue;
        const bool wide = hi - lo > kCapMinWindow && !o_.exhaustive_splits;
        // Prefix states, corrected model: the last stage (k, j] shrinks as k grows, so its
        // memory check fails exactly below some k (a monotone test in floating point too).
        if (wide && !o_.quirks && o_.use_memory_constraint && level == 0 && prefix_family_) {
          const int fh = M - (m + 1) + mp;
          lo = static_cast<size_t>(
              std::partition_point(ks.begin() + lo, ks.begin() + hi,
                                   [&](int k) { return !corrected_mem_ok_here(k + 1, j, mp, fh); }) -
              ks.begin());
          if (lo >= hi) continue;
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
            if (loses(o_.quirks ? (clb + 4.0 * (mp - 1) * Pl / Bmp) / mp : (clb + allreduce(level, mp, Pl)) / mp))
              return;
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
            const double stash =
                (diff(s_.activation_bytes, k + 1, j) + Pl) * static_cast<double>(ceil_div(M - (m + 1), mp));
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
        size_t q0 = !wide ? lo
                          : static_cast<size_t>(
                                std::partition_point(
                                    ks.begin() + lo, ks.begin() + hi,
                                    [&](int k) {
                                      const double pt = at(k, mprev).t;
                                      const double lb =
                                          level == 0
                                              ? last_lb(s_.compute_ns[j] - s_.compute_ns[k],
                                                        s_.parameter_bytes[j] - s_.parameter_bytes[k], mp, B, lat)
                                              : static_cast<double>(s_.compute_ns[j] - s_.compute_ns[k]) * unit / mp;
                                      return !(pt >= lb);
                                    }) -
                                ks.begin());
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

}  // namespace replicated_internal

ReplicatedResult replicated_partition(const CutStates& s, const std::vector<ReplicatedLevel>& levels,
                                      const ReplicatedOptions& o) {
  PW_CHECK(s.complete && s.num_states() > 0, "replicated_partition needs a complete state set");
  PW_CHECK(!levels.empty(), "replicated_partition needs at least one level");
  for (const auto& l : levels)
    if (l.machines < 1 || !(l.bandwidth > 0)) throw InputError("levels: expected machines >= 1 and bandwidth > 0");
  replicated_internal::Solver solver(s, levels, o);
  return solver.run();
}

}  // namespace pw::planner
