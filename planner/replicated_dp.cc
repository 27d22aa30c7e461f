#include "planner/replicated_dp.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "models/error.h"

namespace pw::planner {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

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
    for (int j = 0; j < n_; ++j) {
      std::vector<int>& ks = by_compute_[j];
      ks = s_.preds[j];
      std::stable_sort(ks.begin(), ks.end(), [&](int a, int b) { return s_.compute_ns[a] < s_.compute_ns[b]; });
      compute_of_[j].reserve(ks.size());
      for (int k : ks) compute_of_[j].push_back(s_.compute_ns[k]);
    }
    // Seconds per compute ns on one machine of each level (a level-l machine is G_l devices).
    double g = 1;
    for (const auto& l : levels_) {
      units_.push_back((o_.quirks ? 1e-9 : o_.time_scale) / g);
      g *= l.machines;
    }
  }

  // r_parent: replicas of the level-1 stage this level-0 segment belongs to (two-level corrected
  // model with memory: its bound depends on it); 1 otherwise.
  double ct(int level, int i, int j, int r_parent = 1) const {
    if (j < i) return kNone;
    if (level == 1 && !rtables_.empty()) return rtables_[r_parent - 1][static_cast<size_t>(i) * n_ + j];
    if (level == 0) {
      int64_t c = s_.compute_ns[j] - (i == 0 ? 0 : s_.compute_ns[i - 1]);
      return o_.quirks ? static_cast<double>(c) / 1e9 : static_cast<double>(c) * o_.time_scale;
    }
    return tables_[level][static_cast<size_t>(i) * n_ + j];
  }
  double diff(const std::vector<int64_t>& v, int i, int j) const {
    return static_cast<double>(v[j] - (i == 0 ? 0 : v[i - 1]));
  }

  // Fills one start row of level `level`: A[j * M + m].
  std::vector<Cell> solve_row(int level, int i, int r_parent = 1, bool* memory_bound = nullptr) const {
    const int M = levels_[level].machines;
    const double B = levels_[level].bandwidth;
    const double lat = levels_[level].latency_s;
    const double w = level == 0 ? 1.0 : levels_[level - 1].machines;
    std::vector<Cell> A(static_cast<size_t>(n_) * M);
    auto at = [&](int j, int m) -> Cell& { return A[static_cast<size_t>(j) * M + m]; };
    auto allreduce = [&](int r, double P) {
      return r > 1 ? 2.0 * (r - 1) / r * P / B + 2.0 * (r - 1) * lat : 0.0;
    };
    // Corrected model: memory is checked where stages meet devices (level 0). Devices outside
    // this level-0 group all count as downstream, an upper bound for any group's position.
    // With r_parent replicas of the enclosing level-1 stage the devices downstream of a stage,
    // over all its r * r_parent replicas, are at most D - r_parent * (group devices before it).
    int64_t D = 1;
    for (const auto& l : levels_) D *= l.machines;
    auto corrected_mem_ok = [&](int i0, int j, int r, int from_here) {
      if (!o_.use_memory_constraint || level > 0) return true;
      const double P = diff(s_.parameter_bytes, i0, j);
      const double act = diff(s_.stash_bytes, i0, j) * o_.activation_scale;
      const int64_t inflight = ceil_div(D - static_cast<int64_t>(r_parent) * (M - from_here), static_cast<int64_t>(r) * r_parent);
      const bool ok = P * o_.persistent_per_parameter_byte + (inflight - 1) * P + inflight * act <= o_.memory_bytes;
      if (!ok && memory_bound) *memory_bound = true;
      return ok;
    };
    for (int j = i; j < n_; ++j) {
      const double P = diff(s_.parameter_bytes, i, j);
      const int max_m = o_.straight ? 1 : M;
      for (int m = 0; m < max_m; ++m) {
        const int r = m + 1;
        const double C = ct(level, i, j, r);
        if (std::isnan(C)) continue;
        double t;
        if (o_.quirks) {
          const double stash = static_cast<double>(ceil_div(M - r, r)) * (diff(s_.activation_bytes, i, j) + P);
          if (o_.use_memory_constraint && stash > o_.memory_bytes) continue;
          const double dp = 4.0 * m * P / (B * r) / w;
          t = (C + dp) / r;
        } else {
          if (!corrected_mem_ok(i, j, r, M)) continue;
          t = (C + allreduce(r, P)) / r;
          if (j < n_ - 1) t = std::max(t, (lat + s_.cut_bytes[j] * o_.activation_scale / B) / r);
        }
        at(j, m) = Cell{t, -1, -1, r};
      }
    }
    const double unit = units_[level];
    const int64_t base_comp = i == 0 ? 0 : s_.compute_ns[i - 1];
    for (int m = 1; m < M; ++m) {
      // PipeDream starts j at i + 1, so a one-state segment never gets the "fewer machines"
      // option (a quirk); the corrected model gives it one.
      if (!o_.quirks && o_.fewer_machines) {
        const Cell& fewer = at(i, m - 1);
        Cell& cur = at(i, m);
        if (!std::isnan(fewer.t) && (std::isnan(cur.t) || fewer.t < cur.t)) cur = fewer;
      }
      for (int j = i + 1; j < n_; ++j) {
        Cell best = at(j, m);
        if (o_.fewer_machines && m > 0) {
          const Cell& fewer = at(j, m - 1);
          if (!std::isnan(fewer.t) && (std::isnan(best.t) || fewer.t < best.t)) best = fewer;
        }
        // Candidates (k, mp) in any order, keeping the one PipeDream's loop keeps: the smallest
        // time, ties to the smallest k, then the smallest mp (after the base/fewer incumbent).
        bool from_loop = false;
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
          if (!std::isnan(best.t) && !o_.exhaustive_splits) {
            const double comm_lb = o_.quirks ? (o_.activation_comm && has_out ? 2.0 * out_j / (B * mp) : 0.0)
                                             : (lat + (has_out ? lat + out_j / B : 0.0)) / mp;
            if (comm_lb > best.t * (1 + 1e-9)) continue;
          }
          size_t lo = 0, hi = ks.size();
          if (!std::isnan(best.t) && !o_.exhaustive_splits) {
            const double lim = best.t * (1 + 1e-9) / unit;
            const double hi_c = static_cast<double>(base_comp) + lim * (m + 1 - mp);
            const double lo_c = static_cast<double>(s_.compute_ns[j]) - lim * mp;
            lo = static_cast<size_t>(std::partition_point(cs.begin(), cs.end(), [&](int64_t c) { return static_cast<double>(c) < lo_c; }) - cs.begin());
            hi = static_cast<size_t>(std::partition_point(cs.begin() + lo, cs.end(), [&](int64_t c) { return static_cast<double>(c) <= hi_c; }) - cs.begin());
          }
          for (size_t q = lo; q < hi; ++q) {
            const int k = ks[q];
            // The incumbent improves as the window is walked: its upper end shrinks with it.
            if (!o_.exhaustive_splits && !std::isnan(best.t) &&
                static_cast<double>(cs[q]) > static_cast<double>(base_comp) + best.t * (1 + 1e-9) / unit * (m + 1 - mp))
              break;
            if (k < i) continue;  // A[i][k] exists only for k >= i
            if (i > 0 && s_.pred_set[i - 1].test(k)) continue;
            const Cell& prev = at(k, m - mp);
            if (std::isnan(prev.t)) continue;
            // t = max(prev, last) >= prev exactly: a prefix already slower cannot be kept.
            if (!std::isnan(best.t) && prev.t > best.t) continue;
            const double Cl = ct(level, k + 1, j, m);  // the smallest over r_parent <= m
            if (std::isnan(Cl)) continue;
            // The last stage takes at least Cl / r' (Cm >= Cl; exact in floating point too).
            if (!std::isnan(best.t) && Cl / mp > best.t) continue;
            const double Cm = rtables_.empty() || level != 1 ? Cl : ct(level, k + 1, j, mp);
            if (std::isnan(Cm)) continue;
            const double out_k = o_.quirks ? static_cast<double>(s_.out_bytes[k]) : s_.cut_bytes[k] * o_.activation_scale;
            const double Pl = diff(s_.parameter_bytes, k + 1, j);
            double t;
            if (o_.quirks) {
              const double stash = (diff(s_.activation_bytes, k + 1, j) + Pl) *
                                   static_cast<double>(ceil_div(M - (m + 1), mp));
              if (o_.use_memory_constraint && stash > o_.memory_bytes) continue;
              const double last = (Cl + 4.0 * (mp - 1) * Pl / (B * mp)) / mp;
              t = std::max(prev.t, last);
              if (o_.activation_comm) {
                t = std::max(t, 2.0 * out_k / (B * mp));
                if (has_out) t = std::max(t, 2.0 * out_j / (B * mp));
              }
            } else {
              if (!corrected_mem_ok(k + 1, j, mp, M - (m + 1) + mp)) continue;
              const double comm = ((lat + out_k / B) + (has_out ? lat + out_j / B : 0.0)) / mp;
              const double last = std::max((Cm + allreduce(mp, Pl)) / mp, comm);
              t = std::max(prev.t, last);
            }
            if (better(t, k, mp)) {
              best = Cell{t, k, m - mp, mp};
              from_loop = true;
            }
          }
        }
        at(j, m) = best;
      }
    }
    return A;
  }

  // Runs body(0..count-1) on o_.threads threads (0: the hardware's), tasks taken in order.
  template <class F>
  void parallel_for(int count, F&& body) const {
    int threads = o_.threads > 0 ? o_.threads : static_cast<int>(std::thread::hardware_concurrency());
    threads = std::max(1, std::min(threads, count));
    if (threads == 1) {
      for (int t = 0; t < count; ++t) body(t);
      return;
    }
    std::atomic<int> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
      try {
        for (int t; (t = next.fetch_add(1)) < count;) body(t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = count;
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
    if (error) std::rethrow_exception(error);
  }

  ReplicatedResult run() {
    ReplicatedResult res;
    const int L = static_cast<int>(levels_.size());
    tables_.assign(L, {});
    const bool per_parent = L == 2 && !o_.quirks && o_.use_memory_constraint;
    for (int level = 0; level + 1 < L; ++level) {
      const int M = levels_[level].machines;
      std::vector<double> next(static_cast<size_t>(n_ + 1) * n_, kNone);
      // Start rows are independent: solved on the worker threads, each writing its own row.
      std::vector<char> bound(n_, 0);
      parallel_for(n_, [&](int i) {
        bool b = false;
        std::vector<Cell> row = solve_row(level, i, 1, &b);
        bound[i] = b;
        for (int j = i; j < n_; ++j) next[static_cast<size_t>(i) * n_ + j] = row[static_cast<size_t>(j) * M + M - 1].t;
      });
      std::vector<int> bound_rows;
      for (int i = 0; i < n_; ++i)
        if (bound[i]) bound_rows.push_back(i);
      if (per_parent) {
        // Rows the memory check never cut are the same for every r_parent (the bound only
        // loosens as r_parent grows); the others are solved again per r_parent.
        rtables_.assign(levels_[1].machines, next);
        const int per = static_cast<int>(bound_rows.size());
        parallel_for((levels_[1].machines - 1) * per, [&](int task) {
          const int rp = 2 + task / per, i = bound_rows[task % per];
          std::vector<Cell> row = solve_row(level, i, rp);
          for (int j = i; j < n_; ++j)
            rtables_[rp - 1][static_cast<size_t>(i) * n_ + j] = row[static_cast<size_t>(j) * M + M - 1].t;
        });
      }
      tables_[level + 1] = std::move(next);
    }
    const int M = levels_[L - 1].machines;
    std::vector<Cell> top = solve_row(L - 1, 0);
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
        std::vector<Cell> row = level == L - 1 ? top : solve_row(level, seg.start, rtables_.empty() ? 1 : seg.reps);
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
  std::vector<std::vector<double>> tables_;
  std::vector<std::vector<double>> rtables_;  // per r_parent - 1: level-1 costs (see ct)
  std::vector<std::vector<int>> by_compute_;      // per state: preds by (compute_ns, index)
  std::vector<std::vector<int64_t>> compute_of_;  // their compute_ns, ascending
  std::vector<double> units_;                     // per level: seconds per profile ns per machine
};

}  // namespace

namespace {

struct Evaluator {
  const Solver& solver;
  const CutStates& s;
  const std::vector<ReplicatedLevel>& levels;
  const ReplicatedOptions& o;

  int64_t group_size(int level) const {
    int64_t gs = 1;
    for (int t = 0; t < level; ++t) gs *= levels[t].machines;
    return gs;
  }
  // Level-`level` machine indices of a stage (same for every replica span).
  std::vector<int> machines_of(int level, const ReplicatedStage& st) const {
    std::vector<int> ms;
    for (int d : st.devices) {
      int mi = static_cast<int>((d / group_size(level)) % levels[level].machines);
      if (std::find(ms.begin(), ms.end(), mi) == ms.end()) ms.push_back(mi);
    }
    std::sort(ms.begin(), ms.end());
    return ms;
  }
  // Time of a segment made of `stages` on one level-`level` group.
  double eval(int level, const std::vector<ReplicatedStage>& stages) const {
    const double B = levels[level].bandwidth;
    const double lat = levels[level].latency_s;
    const double w = level == 0 ? 1.0 : levels[level - 1].machines;
    const int n = s.num_states();
    std::vector<std::vector<ReplicatedStage>> parts;
    std::vector<std::vector<int>> keys;
    for (const auto& st : stages) {
      auto key = machines_of(level, st);
      if (parts.empty() || keys.back() != key) {
        parts.emplace_back();
        keys.push_back(key);
      }
      parts.back().push_back(st);
    }
    auto diff = [&](const std::vector<int64_t>& v, int a, int b) {
      return static_cast<double>(v[b] - (a == 0 ? 0 : v[a - 1]));
    };
    double worst = 0;
    int used = 0;
    for (size_t q = 0; q < parts.size(); ++q) {
      const int start = parts[q].front().start, end = parts[q].back().end;
      const int r = static_cast<int>(keys[q].size());
      used += r;
      const double C = level == 0 ? solver.ct(0, start, end - 1) : eval(level - 1, parts[q]);
      const double P = diff(s.parameter_bytes, start, end - 1);
      double t;
      if (o.quirks) {
        const double out_in = static_cast<double>(start > 0 ? s.out_bytes[start - 1] : 0);
        const double out_out = static_cast<double>(s.out_bytes[end - 1]);
        if (q == 0) {
          t = (C + 4.0 * (r - 1) * P / (B * r) / w) / r;
        } else {
          t = (C + 4.0 * (r - 1) * P / (B * r)) / r;
          if (o.activation_comm) {
            t = std::max(t, 2.0 * out_in / (B * r));
            if (end < n) t = std::max(t, 2.0 * out_out / (B * r));
          }
        }
      } else {
        const double ar = r > 1 ? 2.0 * (r - 1) / r * P / B + 2.0 * (r - 1) * lat : 0.0;
        const double in = q == 0 ? 0.0 : lat + s.cut_bytes[start - 1] * o.activation_scale / B;
        const double out = end < n ? lat + s.cut_bytes[end - 1] * o.activation_scale / B : 0.0;
        t = std::max((C + ar) / r, (in + out) / r);
      }
      worst = std::max(worst, t);
    }
    (void)used;
    return worst;
  }
};

}  // namespace

double replicated_evaluate(const CutStates& s, const std::vector<ReplicatedLevel>& levels,
                           const ReplicatedOptions& o, const std::vector<ReplicatedStage>& stages) {
  Solver solver(s, levels, o);
  Evaluator ev{solver, s, levels, o};
  return ev.eval(static_cast<int>(levels.size()) - 1, stages);
}

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
