#include "planner/uniform_sync.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/error.h"

namespace pw::planner {
namespace {

constexpr double kInfinite = std::numeric_limits<double>::infinity();
constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max() / 4;

bool same_costs(const models::LayerProfile& a, const models::LayerProfile& b) {
  return !a.is_data_loading && !b.is_data_loading && a.forward_ns == b.forward_ns &&
         a.backward_input_ns == b.backward_input_ns && a.backward_weight_ns == b.backward_weight_ns &&
         a.output_bytes == b.output_bytes && a.stash_bytes == b.stash_bytes && a.parameter_bytes == b.parameter_bytes &&
         a.optimizer_bytes == b.optimizer_bytes && a.workspace_bytes == b.workspace_bytes &&
         a.weight_pending_bytes == b.weight_pending_bytes && a.step_ns == b.step_ns;
}

}  // namespace

std::optional<UniformRun> find_uniform_run(const models::Profile& p) {
  const int n = static_cast<int>(p.layers.size());
  UniformRun best;
  for (int i = 0; i < n;) {
    int j = i + 1;
    while (j < n && same_costs(p.layers[i], p.layers[j])) ++j;
    if (j - i > best.length()) best = {i, j};
    i = j;
  }
  if (best.length() < 2 || n - best.length() > kMaxEnds) return std::nullopt;
  return best;
}

UniformSync::UniformSync(const SyncModel& model, UniformRun run) : m_(model), run_(run) {
  interior_uniform_ = run.length() >= 2 && run.end <= model.n();
  for (int c = run.begin + 2; interior_uniform_ && c < run.end; ++c)
    interior_uniform_ =
        model.cut_bytes_[c] == model.cut_bytes_[run.begin + 1] && model.in_bytes_[c] == model.in_bytes_[run.begin + 1];
}

// Everything that depends on the configuration: caps of the run's layers per stage by
// in-flight count (memory), time helpers, cut costs.
struct UniformSync::Setup {
  const SyncModel& m;
  const SyncConfig& cfg;
  int n, A, Z, R, P;
  bool rec;
  double scale, s;
  int64_t tu;                      // time of one repeated layer (ns at the profile's batch)
  std::vector<int64_t> mc;         // mc[q]: repeated layers a stage of the run holds at q (q = 1..P)
  std::vector<int64_t> mc_prefix;  // prefix sums of mc
  mutable std::vector<std::vector<int64_t>> first_cap, last_cap;  // [c_h or c_t - Z][inflight], -1 unknown
  std::vector<std::vector<int>> level_count;  // [level][q]: cuts after stages q' in 2..q at that level
  std::vector<double> x_interior;             // per level: a cut inside the run

  Setup(const SyncModel& model, const SyncConfig& c, UniformRun run, bool recompute)
      : m(model),
        cfg(c),
        n(model.n()),
        A(run.begin),
        Z(run.end),
        R(run.length()),
        P(model.max_stages()),
        rec(recompute) {
    scale = static_cast<double>(cfg.micro_batch_size) / m.profile_batch_;
    s = scale * 1e-9;
    tu = time(A, A + 1);
    const int64_t inflight_max = inflight(P);
    first_cap.assign(A + 1, std::vector<int64_t>(inflight_max + 1, -1));
    last_cap.assign(n - Z + 1, std::vector<int64_t>(inflight_max + 1, -1));
    head_fit.assign(static_cast<size_t>(A + 1) * (A + 1) * (inflight_max + 1), -1);
    std::vector<int64_t> by_inflight(inflight_max + 1, -1);
    mc.assign(P + 1, 0);
    mc_prefix.assign(P + 1, 0);
    for (int q = 1; q <= P; ++q) {
      const int64_t f = inflight(q);
      if (by_inflight[f] < 0)  // a stage strictly inside the run: [A + 1, A + 1 + k), k <= R - 2
        by_inflight[f] =
            R >= 3 ? largest(R - 2, [&](int64_t k) { return fits(A + 1, A + 1 + static_cast<int>(k), q); }) : 0;
      mc[q] = by_inflight[f];
      mc_prefix[q] = mc_prefix[q - 1] + mc[q];
    }
    const int L = static_cast<int>(m.cluster_.levels().size());
    level_count.assign(L, std::vector<int>(P + 1, 0));
    for (int q = 2; q <= P; ++q) {
      const int lv = m.cluster_.level_between(q - 1, q - 2);
      for (int l = 0; l < L; ++l) level_count[l][q] = level_count[l][q - 1] + (l == lv ? 1 : 0);
    }
    x_interior.resize(L);
    for (int l = 0; l < L; ++l) x_interior[l] = R >= 2 ? m.cut_level_s(A + 1, l, scale) : 0;
  }

  double cut(int c, int q) const { return m.cut_s(c, q, scale); }
  int64_t inflight(int q) const { return cfg.gpipe_memory ? cfg.m : std::min<int64_t>(q, cfg.m); }
  int64_t time(int a, int b) const {
    const int64_t f = m.fwd_[b] - m.fwd_[a], bw = m.bwd_[b] - m.bwd_[a];
    return f + bw + (rec ? f : 0);
  }
  bool fits(int a, int b, int q) const {
    return cfg.memory_limit <= 0 || m.stage(a, b, rec, q, P, cfg).memory_bytes <= cfg.memory_limit;
  }
  // fits() of a stage inside the head ([a, b), b <= A), remembered per in-flight count.
  mutable std::vector<int8_t> head_fit;
  bool head_fits(int a, int b, int q) const {
    const size_t i = (static_cast<size_t>(a) * (A + 1) + b) * first_cap[0].size() + inflight(q);
    if (head_fit[i] < 0) head_fit[i] = fits(a, b, q) ? 1 : 0;
    return head_fit[i] == 1;
  }
  // Largest k in [0, hi] with ok(k) (ok monotone decreasing in k; ok(0) assumed).
  template <class F>
  static int64_t largest(int64_t hi, F ok) {
    if (hi <= 0 || !ok(1)) return 0;
    int64_t lo = 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (ok(mid)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
  // First stage of >= 2 in the run: [c_h, A + k), k <= R - 1, at q.
  int64_t cap_first(int ch, int q) const {
    int64_t& v = first_cap[ch][inflight(q)];
    if (v < 0) v = largest(R - 1, [&](int64_t k) { return fits(ch, A + static_cast<int>(k), q); });
    return v;
  }
  int64_t cap_last(int ct, int q) const {
    int64_t& v = last_cap[ct - Z][inflight(q)];
    if (v < 0) v = largest(R - 1, [&](int64_t k) { return fits(Z - static_cast<int>(k), ct, q); });
    return v;
  }
  int64_t time_cap(int64_t X, int64_t off) const {
    if (X < off) return -1;
    if (tu == 0 || X >= kNoBound) return R;
    return std::min<int64_t>(R, (X - off) / tu);
  }
  // Sum over stages of the run at q in [lo, hi] of min(mc[q], tc); mc is non-increasing in q.
  int64_t pure_sum(int lo, int hi, int64_t tc) const {
    if (lo > hi) return 0;
    int a = lo, b = hi + 1;  // first q with mc[q] < tc
    while (a < b) {
      const int mid = a + (b - a) / 2;
      if (mc[mid] < tc) b = mid;
      else a = mid + 1;
    }
    return tc * (a - lo) + (mc_prefix[hi] - mc_prefix[a - 1]);
  }
};

// A choice of cuts in the head and in the tail.
struct UniformSync::Combo {
  std::vector<int> head, tail;  // cut positions, ascending (head: in 1..A, tail: in Z..n-1)
  int ch = 0, ct = 0;           // the run's stages span [ch, ct)
  int64_t fixed_time = 0;       // largest time of a stage entirely in the head or the tail
  bool tail_fits = true;
  double tail_x_sum = 0, tail_x_max = 0;  // the cuts at and after ct (their q is fixed)
  int h() const { return static_cast<int>(head.size()); }
  int t() const { return static_cast<int>(tail.size()); }
};

namespace {

struct Candidate {
  int combo = 0, p = 0;
  double sum = 0, max_x = 0, lower = 0;  // S, largest cut, lower bound of S + (m-1) M
};

}  // namespace

bool UniformSync::applies(const SyncConfig& cfg) const {
  if (!interior_uniform_ || cfg.zb_memory || m_.restricted_starts()) return false;
  if (cfg.recompute != -1) return true;
  // "auto": the DP re-materializes nothing when every stage fits without it (its own shortcut,
  // sync_dp.cc) or when there is no memory limit.
  if (cfg.memory_limit <= 0) return true;
  const int n = m_.n();
  const double scale = static_cast<double>(cfg.micro_batch_size) / m_.profile_batch_;
  const int64_t kept = cfg.gpipe_memory ? cfg.m : std::min<int64_t>(m_.max_stages(), cfg.m);
  const int64_t worst = ceil_bytes((m_.param_[n] - m_.param_[0]) * cfg.persistent_per_parameter_byte) +
                        ceil_bytes(m_.work_range(0, n) * scale) +
                        ceil_bytes(kept * ((m_.stash_[n] - m_.stash_[0]) * scale));
  return worst <= cfg.memory_limit;
}

namespace {

// All (head cuts, tail cuts) combinations with their fixed parts.
template <class Setup, class Combo>
std::vector<Combo> make_combos(const Setup& su) {
  std::vector<Combo> out;
  const int nh = su.A, nt = su.n - su.Z;
  for (int hm = 0; hm < (1 << nh); ++hm)
    for (int tm = 0; tm < (1 << nt); ++tm) {
      Combo c;
      for (int i = 0; i < nh; ++i)
        if (hm >> i & 1) c.head.push_back(i + 1);
      for (int i = 0; i < nt; ++i)
        if (tm >> i & 1) c.tail.push_back(su.Z + i);
      c.ch = c.head.empty() ? 0 : c.head.back();
      c.ct = c.tail.empty() ? su.n : c.tail.front();
      int prev = 0;
      for (int cut : c.head) {
        c.fixed_time = std::max(c.fixed_time, su.time(prev, cut));
        prev = cut;
      }
      const int t = c.t();
      if (c.h() + t + 1 > su.P) continue;  // more stages than devices
      for (int i = 0; i < t; ++i) {
        const int a = c.tail[i], b = i + 1 < t ? c.tail[i + 1] : su.n;
        const int q = t - i;
        c.fixed_time = std::max(c.fixed_time, su.time(a, b));
        c.tail_fits = c.tail_fits && su.fits(a, b, q);
        const double x = su.cut(a, q + 1);  // the cut before tail stage i
        c.tail_x_sum += x;
        c.tail_x_max = std::max(c.tail_x_max, x);
      }
      out.push_back(std::move(c));
    }
  return out;
}

}  // namespace

std::vector<SyncStage> UniformSync::optimize(const SyncConfig& cfg, double* best_iteration_s) const {
  PW_CHECK(applies(cfg), "UniformSync::optimize called outside its conditions");
  const bool rec = cfg.recompute == 1;
  Setup su(m_, cfg, run_, rec);
  const std::vector<Combo> combos = make_combos<Setup, Combo>(su);
  const double m1 = cfg.m - 1;
  const int64_t total = su.time(0, su.n);

  // Do the head stages of a combination fit at p stages?
  auto head_fits = [&](const Combo& c, int p) {
    int prev = 0;
    for (int i = 0; i < c.h(); ++i) {
      if (!su.head_fits(prev, c.head[i], p - i)) return false;
      prev = c.head[i];
    }
    return true;
  };
  // The run's stages: is a bound X (ns) feasible?
  auto mid_feasible = [&](const Combo& c, int p, int64_t X) {
    const int nmid = p - c.h() - c.t();
    if (nmid == 1) return su.time(c.ch, c.ct) <= X && su.fits(c.ch, c.ct, p - c.h());
    const int64_t cf = std::min(su.cap_first(c.ch, p - c.h()), su.time_cap(X, su.time(c.ch, su.A)));
    const int64_t cl = std::min(su.cap_last(c.ct, c.t() + 1), su.time_cap(X, su.time(su.Z, c.ct)));
    if (cf < 1 || cl < 1) return false;
    int64_t sum = cf + cl;
    if (nmid >= 3) {
      const int lo = c.t() + 2, hi = p - c.h() - 1;
      const int64_t tc = su.time_cap(X, 0);
      if (tc < 1 || su.mc[hi] < 1) return false;
      sum += su.pure_sum(lo, hi, tc);
    }
    return sum >= su.R;
  };
  // Smallest feasible bound on the run's stages (ns), or -1.
  auto mid_min = [&](const Combo& c, int p) -> int64_t {
    const int nmid = p - c.h() - c.t();
    if (nmid == 1) return mid_feasible(c, p, kNoBound) ? su.time(c.ch, c.ct) : -1;
    if (!mid_feasible(c, p, kNoBound)) return -1;
    int64_t best = -1;
    for (int64_t off : {int64_t{0}, su.time(c.ch, su.A), su.time(su.Z, c.ct)}) {
      int64_t lo = 1, hi = su.R;
      if (!mid_feasible(c, p, off + hi * su.tu)) continue;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (mid_feasible(c, p, off + mid * su.tu)) hi = mid;
        else lo = mid + 1;
      }
      const int64_t v = off + lo * su.tu;
      if (best < 0 || v < best) best = v;
    }
    return best;
  };

  if (!any_fits(su, combos)) return {};
  std::vector<Candidate> cands;
  for (int ci = 0; ci < static_cast<int>(combos.size()); ++ci) {
    const Combo& c = combos[ci];
    if (!c.tail_fits) continue;
    const int pmin = c.h() + c.t() + 1, pmax = std::min(su.P, c.h() + c.t() + su.R);
    for (int p = pmin; p <= pmax; ++p) {
      const int nmid = p - c.h() - c.t();
      Candidate k{ci, p};
      double xs = c.tail_x_sum, xm = c.tail_x_max;
      for (int i = 0; i < c.h(); ++i) {
        const double x = su.cut(c.head[i], p - i);
        xs += x;
        xm = std::max(xm, x);
      }
      if (nmid >= 2) {  // cuts inside the run: after its stages at q = t + 2 .. p - h
        const int lo = c.t() + 2, hi = p - c.h();
        for (size_t l = 0; l < su.x_interior.size(); ++l) {
          const int cnt = su.level_count[l][hi] - su.level_count[l][lo - 1];
          if (cnt > 0) {
            xs += cnt * su.x_interior[l];
            xm = std::max(xm, su.x_interior[l]);
          }
        }
      }
      k.sum = total * su.s + 2 * xs;
      k.max_x = xm;
      const int64_t mid_total = su.time(c.ch, c.ct);
      const int64_t even = (mid_total + nmid - 1) / nmid;
      k.lower = k.sum + m1 * std::max(std::max(c.fixed_time, even) * su.s, xm);
      cands.push_back(k);
    }
  }
  double best = best_iteration_s ? *best_iteration_s : kInfinite;
  int best_c = -1, best_p = 0;
  double best_M = 0;
  std::vector<SyncStage> best_stages;

  // The partition of (combination, p) at bound M with the smallest cut positions.
  auto build = [&](const Combo& c, int p, double M) {
    int64_t X = kNoBound;
    if (M < kInfinite) {
      X = static_cast<int64_t>(std::floor(M / su.s));
      while ((X + 1) * su.s <= M) ++X;
      while (X > 0 && X * su.s > M) --X;
    }
    std::vector<SyncStage> st;
    int prev = 0;
    for (int cut : c.head) {
      st.push_back({prev, cut, rec});
      prev = cut;
    }
    const int nmid = p - c.h() - c.t();
    if (nmid == 1) {
      st.push_back({c.ch, c.ct, rec});
    } else {
      std::vector<int64_t> cap(nmid);
      cap[0] = std::min(su.cap_first(c.ch, p - c.h()), su.time_cap(X, su.time(c.ch, su.A)));
      for (int j = 1; j + 1 < nmid; ++j) cap[j] = std::min(su.mc[p - c.h() - j], su.time_cap(X, 0));
      cap[nmid - 1] = std::min(su.cap_last(c.ct, c.t() + 1), su.time_cap(X, su.time(su.Z, c.ct)));
      std::vector<int64_t> after(nmid + 1, 0);
      for (int j = nmid - 1; j >= 0; --j) after[j] = after[j + 1] + cap[j];
      int64_t left = su.R;
      int pos = c.ch;
      for (int j = 0; j < nmid; ++j) {
        const int64_t k = j + 1 == nmid ? left : std::max<int64_t>(1, left - after[j + 1]);
        PW_CHECK(k >= 1 && k <= cap[j], "uniform partition: caps do not cover the run");
        const int end = j + 1 == nmid ? c.ct : (j == 0 ? su.A : pos) + static_cast<int>(k);
        st.push_back({pos, end, rec});
        pos = end;
        left -= k;
      }
    }
    for (size_t i = 0; i < c.tail.size(); ++i)
      st.push_back({c.tail[i], i + 1 < c.tail.size() ? c.tail[i + 1] : su.n, rec});
    return st;
  };
  auto cuts_less = [](const std::vector<SyncStage>& a, const std::vector<SyncStage>& b) {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      if (a[i].end != b[i].end) return a[i].end < b[i].end;
    return a.size() < b.size();
  };

  // The candidates in the order of their lower bounds, stopping where the bound passes the
  // incumbent: first the few with the smallest bounds (an incumbent, usually the optimum), then
  // the rest of those whose bound does not exceed it.
  auto by_lower = [](const Candidate& a, const Candidate& b) {
    return a.lower != b.lower ? a.lower < b.lower : a.combo != b.combo ? a.combo < b.combo : a.p < b.p;
  };
  const size_t first = std::min<size_t>(cands.size(), 64);
  std::partial_sort(cands.begin(), cands.begin() + first, cands.end(), by_lower);
  size_t next = 0;
  auto evaluate = [&](const Candidate& k) {
    const Combo& c = combos[k.combo];
    if (!head_fits(c, k.p)) return;
    double f, M;
    if (m1 == 0) {
      if (!mid_feasible(c, k.p, kNoBound)) return;
      f = k.sum;
      M = kInfinite;  // one micro-batch: the DP keeps the partition of its unbounded solve
    } else {
      const int64_t mm = mid_min(c, k.p);
      if (mm < 0) return;
      M = std::max(std::max(c.fixed_time, mm) * su.s, k.max_x);
      f = k.sum + m1 * M;
    }
    if (f < best) {
      best = f;
      best_c = k.combo;
      best_p = k.p;
      best_M = M;
      best_stages.clear();
    } else if (f == best && best_c >= 0) {
      if (best_stages.empty()) best_stages = build(combos[best_c], best_p, best_M);
      std::vector<SyncStage> other = build(c, k.p, M);
      if (cuts_less(other, best_stages)) {
        best_stages = std::move(other);
        best_c = k.combo;
        best_p = k.p;
        best_M = M;
      }
    }
  };
  for (; next < first && cands[next].lower <= best; ++next) evaluate(cands[next]);
  if (next == first) {
    std::vector<Candidate> rest;
    for (size_t i = first; i < cands.size(); ++i)
      if (cands[i].lower <= best) rest.push_back(cands[i]);
    std::sort(rest.begin(), rest.end(), by_lower);
    for (const Candidate& k : rest) {
      if (k.lower > best) break;
      evaluate(k);
    }
  }
  if (best_c < 0) return {};
  if (best_stages.empty()) best_stages = build(combos[best_c], best_p, best_M);
  if (best_iteration_s) *best_iteration_s = best;
  return best_stages;
}

bool UniformSync::feasible_at_limit(const SyncConfig& cfg) const {
  Setup su(m_, cfg, run_, cfg.recompute == 1);
  return any_fits(su, make_combos<Setup, Combo>(su));
}

bool UniformSync::any_fits(const Setup& su, const std::vector<Combo>& combos) const {
  for (const Combo& c : combos) {
    if (!c.tail_fits) continue;
    auto fits_at = [&](int p) {
      int prev = 0;
      for (int i = 0; i < c.h(); ++i) {
        if (!su.head_fits(prev, c.head[i], p - i)) return false;
        prev = c.head[i];
      }
      const int nmid = p - c.h() - c.t();
      if (nmid == 1) return su.fits(c.ch, c.ct, p - c.h());
      const int64_t cf = su.cap_first(c.ch, p - c.h()), cl = su.cap_last(c.ct, c.t() + 1);
      if (cf < 1 || cl < 1) return false;
      int64_t sum = cf + cl;
      if (nmid >= 3) {
        const int lo = c.t() + 2, hi = p - c.h() - 1;
        if (su.mc[hi] < 1) return false;
        sum += su.mc_prefix[hi] - su.mc_prefix[lo - 1];
      }
      return sum >= su.R;
    };
    // From p = h + m + 1 on every in-flight count has reached m, and from h + t + 3 on the run
    // has >= 3 stages: beyond both only the sum of the run's caps changes, and it grows with p,
    // so the largest p answers for all of them.
    const int pmin = c.h() + c.t() + 1, pmax = std::min(su.P, c.h() + c.t() + su.R);
    const int64_t saturated = std::max<int64_t>(c.h() + su.inflight(su.P) + 1, c.h() + c.t() + 3);
    const int last_single = static_cast<int>(std::min<int64_t>(pmax, saturated));
    for (int p = pmin; p <= last_single; ++p)
      if (fits_at(p)) return true;
    if (pmax > last_single && fits_at(pmax)) return true;
  }
  return false;
}

bool UniformSync::applies_min_memory(const SyncConfig& cfg) const {
  return interior_uniform_ && !cfg.zb_memory && cfg.recompute != -1 && !m_.restricted_starts();
}

int64_t UniformSync::min_memory_needed(const SyncConfig& cfg, int64_t below) const {
  PW_CHECK(applies_min_memory(cfg), "UniformSync::min_memory_needed called outside its conditions");
  // The DP's search (SyncModel::min_memory_needed) with the same feasibility answers.
  SyncConfig c = cfg;
  return smallest_fitting_limit(
      [&](int64_t lim) {
        c.memory_limit = lim;
        return feasible_at_limit(c);
      },
      m_.memory_floor(cfg), below);
}

}  // namespace pw::planner
