#include "planner/sync_dp.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/error.h"

namespace pw::planner {

SyncModel::SyncModel(const models::Profile& p, const models::Cluster& c)
    : cluster_(c), profile_batch_(p.micro_batch) {
  const int n = static_cast<int>(p.layers.size());
  fwd_.assign(n + 1, 0);
  bwd_.assign(n + 1, 0);
  stash_.assign(n + 1, 0);
  param_.assign(n + 1, 0);
  work_.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    const auto& l = p.layers[i];
    const bool load = l.is_data_loading;
    fwd_[i + 1] = fwd_[i] + (load ? 0 : l.forward_ns);
    bwd_[i + 1] = bwd_[i] + (load ? 0 : l.backward_ns());
    stash_[i + 1] = stash_[i] + l.stash_bytes;
    param_[i + 1] = param_[i] + l.parameter_bytes;
    work_[i + 1] = std::max(work_[i], l.workspace_bytes);
  }
  std::vector<int> last_use(n, -1);
  for (const auto& e : p.edges) last_use[e.from] = std::max(last_use[e.from], e.to);
  std::vector<int64_t> diff(n + 2, 0);
  for (int u = 0; u < n; ++u)
    if (last_use[u] > u && !p.layers[u].is_data_loading) {
      diff[u + 1] += p.layers[u].output_bytes;
      diff[last_use[u] + 1] -= p.layers[u].output_bytes;
    }
  cut_bytes_.assign(n + 1, 0);
  int64_t run = 0;
  for (int c = 0; c <= n; ++c) {
    run += diff[c];
    cut_bytes_[c] = (c == 0 || c == n) ? 0 : run;
  }
}

int SyncModel::max_stages() const { return std::min(cluster_.num_devices(), n()); }

double SyncModel::cut_s(int c, int q, double scale) const {
  // Stage with q stages left sits on device q-1, the next one on q-2.
  const int level = cluster_.level_between(q - 1, q - 2);
  const auto& lv = cluster_.levels()[level];
  return static_cast<double>(lv.latency_ns) * 1e-9 + cut_bytes_[c] * scale / lv.bandwidth_bytes_per_s;
}

SyncStageCost SyncModel::stage(int a, int b, bool rec, int q, int p, const SyncConfig& cfg) const {
  (void)p;
  const double scale = static_cast<double>(cfg.micro_batch_size) / profile_batch_;
  SyncStageCost s;
  s.forward_s = (fwd_[b] - fwd_[a]) * scale * 1e-9;
  s.backward_s = (bwd_[b] - bwd_[a]) * scale * 1e-9 + (rec ? s.forward_s : 0.0);
  s.compute_s = s.forward_s + s.backward_s;
  const int64_t inflight = cfg.gpipe_memory ? cfg.m : std::min(q, cfg.m);
  s.persistent_bytes = static_cast<int64_t>(std::ceil((param_[b] - param_[a]) * cfg.persistent_per_parameter_byte));
  const double stash = (stash_[b] - stash_[a]) * scale;
  double act = rec ? inflight * (cut_bytes_[a] * scale) + stash : inflight * stash;
  s.activation_bytes = static_cast<int64_t>(std::ceil(act));
  s.memory_bytes = s.persistent_bytes + s.activation_bytes;
  return s;
}

SyncEvaluation SyncModel::evaluate(const std::vector<SyncStage>& stages, const SyncConfig& cfg) const {
  SyncEvaluation ev;
  const int p = static_cast<int>(stages.size());
  PW_CHECK(p >= 1 && p <= cluster_.num_devices(), "sync plan needs 1..devices stages");
  const double scale = static_cast<double>(cfg.micro_batch_size) / profile_batch_;
  double sum = 0, mx = 0;
  int bottleneck_stage = 0;
  for (int s = 0; s < p; ++s) {
    const int q = p - s;
    SyncStageCost c = stage(stages[s].begin, stages[s].end, stages[s].recompute, q, p, cfg);
    if (s > 0) c.in_comm_s = cut_s(stages[s].begin, q + 1, scale);
    if (s + 1 < p) c.out_comm_s = cut_s(stages[s].end, q, scale);
    sum += c.compute_s + 2 * c.out_comm_s;
    if (c.compute_s > mx) {
      mx = c.compute_s;
      bottleneck_stage = s;
    }
    mx = std::max(mx, c.out_comm_s);
    if (cfg.memory_limit > 0 && c.memory_bytes > cfg.memory_limit) ev.fits = false;
    ev.peak_memory_bytes = std::max(ev.peak_memory_bytes, c.memory_bytes);
    ev.stages.push_back(c);
  }
  ev.bottleneck_s = mx;
  ev.iteration_s = sum + (cfg.m - 1) * mx;
  ev.busy_of_bottleneck_s = cfg.m * ev.stages[bottleneck_stage].compute_s;
  return ev;
}

struct SyncModel::Solved {
  double sum = 0;   // S, computed in the DP's order
  double max = 0;   // M of the partition found
  std::vector<SyncStage> stages;
  // Scratch reused between evaluations.
  std::vector<double> G;        // (P+1) x (n+1), row q
  std::vector<int> next;        // chosen next cut
  std::vector<uint8_t> rec;     // chosen re-materialization
  std::vector<double> w, wr;    // window values per j
  std::vector<std::vector<int>> sparse;
  std::vector<int> deque;
};

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

bool SyncModel::solve(const SyncConfig& cfg, double bound, Solved& out) const {
  ++last_evaluations_;
  const int n = this->n();
  const int P = max_stages();
  const double scale = static_cast<double>(cfg.micro_batch_size) / profile_batch_;
  const double s = scale * 1e-9;
  const size_t W = static_cast<size_t>(n) + 1;
  auto& G = out.G;
  G.assign(static_cast<size_t>(P + 1) * W, kInf);
  out.next.assign(G.size(), -1);
  out.rec.assign(G.size(), 0);
  const bool allow_plain = cfg.recompute != 1, allow_rec = cfg.recompute != 0;
  auto inflight = [&](int q) -> int64_t { return cfg.gpipe_memory ? cfg.m : std::min(q, cfg.m); };
  auto persist = [&](int a, int b) {
    return static_cast<int64_t>(std::ceil((param_[b] - param_[a]) * cfg.persistent_per_parameter_byte));
  };
  const int64_t L = cfg.memory_limit;
  auto plain_ok = [&](int a, int b, int64_t inf) {
    if (((fwd_[b] - fwd_[a]) + (bwd_[b] - bwd_[a])) * s > bound) return false;
    if (L <= 0) return true;
    return persist(a, b) + static_cast<int64_t>(std::ceil(inf * ((stash_[b] - stash_[a]) * scale))) <= L;
  };
  auto rec_ok = [&](int a, int b, int64_t inf) {
    if ((2 * (fwd_[b] - fwd_[a]) + (bwd_[b] - bwd_[a])) * s > bound) return false;
    if (L <= 0) return true;
    return persist(a, b) + static_cast<int64_t>(std::ceil(inf * (cut_bytes_[a] * scale) + (stash_[b] - stash_[a]) * scale)) <= L;
  };
  // Re-materialization can only help where a plain stage does not fit in memory.
  bool rec_useful = allow_rec;
  if (allow_rec && allow_plain && L > 0) {
    const int64_t worst = persist(0, n) + static_cast<int64_t>(std::ceil(inflight(P) * ((stash_[n] - stash_[0]) * scale)));
    if (worst <= L) rec_useful = false;
  }
  // q = 1: the last stage [k, n).
  for (int k = 0; k < n; ++k) {
    const size_t c = W + k;
    if (allow_plain && plain_ok(k, n, inflight(1))) {
      G[c] = 0;
      out.next[c] = n;
    } else if (rec_useful && rec_ok(k, n, inflight(1))) {
      G[c] = (fwd_[n] - fwd_[k]) * s;
      out.next[c] = n;
      out.rec[c] = 1;
    }
  }
  auto& w = out.w;
  auto& wr = out.wr;
  auto& dq = out.deque;
  w.assign(W, kInf);
  wr.assign(W, kInf);
  for (int q = 2; q <= P; ++q) {
    const double* Gp = &G[static_cast<size_t>(q - 1) * W];
    double* Gq = &G[static_cast<size_t>(q) * W];
    const int kmax = n - q;      // first layer of this stage
    const int jmax = n - q + 1;  // last allowed cut
    bool any = false;
    for (int j = 1; j <= jmax; ++j) {
      w[j] = kInf;
      if (Gp[j] == kInf) continue;
      const double x = cut_s(j, q, scale);
      if (x > bound) continue;
      w[j] = 2 * x + Gp[j];
      any = true;
    }
    if (!any) break;  // no suffix of q-1 stages exists, nor of more
    const int64_t inf = inflight(q);
    // Plain stages: sliding-window minimum of w over (k, J(k)].
    if (allow_plain) {
      dq.clear();
      size_t head = 0;
      int J = 0;  // largest j pushed
      for (int k = 0; k <= kmax; ++k) {
        if (J < k) J = k;
        while (J + 1 <= jmax && plain_ok(k, J + 1, inf)) {
          ++J;
          while (dq.size() > head && w[dq.back()] >= w[J]) dq.pop_back();
          dq.push_back(J);
        }
        while (dq.size() > head && dq[head] <= k) ++head;
        if (dq.size() > head && w[dq[head]] < kInf) {
          Gq[k] = w[dq[head]];
          out.next[static_cast<size_t>(q) * W + k] = dq[head];
        }
      }
    }
    if (!rec_useful) continue;
    // Re-materialized stages: range minimum of wr(j) = fwd prefix * s + w(j) beyond the plain window.
    const int levels = 1 + static_cast<int>(std::log2(std::max(jmax, 1)));
    auto& sp = out.sparse;  // sp[l][j]: index of the first minimum of wr over [j, j + 2^l)
    if (static_cast<int>(sp.size()) < levels) sp.resize(levels);
    for (int j = 1; j <= jmax; ++j) wr[j] = w[j] == kInf ? kInf : fwd_[j] * s + w[j];
    sp[0].resize(jmax + 1);
    for (int j = 1; j <= jmax; ++j) sp[0][j] = j;
    for (int l = 1; l < levels; ++l) {
      sp[l].resize(jmax + 1);
      for (int j = 1; j + (1 << l) - 1 <= jmax; ++j) {
        const int a = sp[l - 1][j], b = sp[l - 1][j + (1 << (l - 1))];
        sp[l][j] = wr[b] < wr[a] ? b : a;
      }
    }
    auto argmin = [&](int a, int b) {  // first index of the minimum of wr over [a, b]
      const int l = static_cast<int>(std::log2(b - a + 1));
      const int i1 = sp[l][a], i2 = sp[l][b - (1 << l) + 1];
      return wr[i2] < wr[i1] ? i2 : i1;
    };
    int plain_end = 0;
    for (int k = 0; k <= kmax; ++k) {
      // Plain window end (recomputed; rec_useful implies memory binds somewhere).
      if (allow_plain) {
        if (plain_end < k) plain_end = k;
        while (plain_end + 1 <= jmax && plain_ok(k, plain_end + 1, inf)) ++plain_end;
      } else {
        plain_end = k;
      }
      // Largest j with a re-materialized stage [k, j) allowed (monotone in j).
      int lo = std::max(plain_end, k), hi = jmax;
      if (lo >= hi || !rec_ok(k, lo + 1, inf)) continue;
      const int first = ++lo;
      while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        (rec_ok(k, mid, inf) ? lo : hi) = mid;
      }
      const int jr = rec_ok(k, hi, inf) ? hi : lo;
      const int j = argmin(first, jr);
      if (wr[j] == kInf) continue;
      const double v = wr[j] - fwd_[k] * s;
      const size_t c = static_cast<size_t>(q) * W + k;
      if (v < Gq[k]) {
        Gq[k] = v;
        out.next[c] = j;
        out.rec[c] = 1;
      }
    }
  }
  int best_q = -1;
  double best = kInf;
  for (int q = 1; q <= P; ++q)
    if (G[static_cast<size_t>(q) * W] < best) {
      best = G[static_cast<size_t>(q) * W];
      best_q = q;
    }
  if (best_q < 0) return false;
  out.stages.clear();
  out.sum = (fwd_[n] + bwd_[n]) * s + best;
  out.max = 0;
  int k = 0;
  for (int q = best_q; q >= 1; --q) {
    const size_t c = static_cast<size_t>(q) * W + k;
    const int j = out.next[c];
    const bool r = out.rec[c];
    out.stages.push_back({k, j, r});
    out.max = std::max(out.max, (r ? 2 * (fwd_[j] - fwd_[k]) + (bwd_[j] - bwd_[k]) : (fwd_[j] - fwd_[k]) + (bwd_[j] - bwd_[k])) * s);
    if (q > 1) out.max = std::max(out.max, cut_s(j, q, scale));
    k = j;
  }
  return true;
}

std::vector<SyncStage> SyncModel::optimize(const SyncConfig& cfg, double* best_iteration_s) const {
  last_evaluations_ = 0;
  const double m1 = cfg.m - 1;
  double best = best_iteration_s ? *best_iteration_s : kInf;
  std::vector<SyncStage> best_stages;
  Solved sol;
  auto consider = [&](const Solved& s) {
    const double f = s.sum + m1 * s.max;
    if (f < best) {
      best = f;
      best_stages = s.stages;
    }
  };
  if (!solve(cfg, kInf, sol)) return {};
  consider(sol);
  if (m1 > 0) {
    // Intervals (lo, hi) of the bottleneck still to search, with g(top) known for the part above.
    struct Interval { double lo, top_sum, top_max; };
    std::vector<Interval> todo{{0.0, sol.sum, sol.max}};
    while (!todo.empty()) {
      Interval iv = todo.back();
      todo.pop_back();
      // Partitions with M in [top_max, top] cannot beat the one found at top.
      const double hi = std::nextafter(iv.top_max, 0.0);
      if (!(hi > iv.lo)) continue;
      if (iv.top_sum + m1 * iv.lo >= best) continue;
      // Bisect (geometric when the range is wide), walk down when it is narrow.
      double mid = iv.lo > 0 ? iv.lo + (hi - iv.lo) / 2 : hi / 2;
      if (iv.lo > 0 && hi - iv.lo < 1e-3 * hi) mid = hi;
      if (!(mid > iv.lo)) mid = hi;
      if (!solve(cfg, mid, sol)) {
        // Nothing fits under mid: search (mid, hi) only.
        if (mid < hi) todo.push_back({mid, iv.top_sum, iv.top_max});
        continue;
      }
      consider(sol);
      if (mid < hi) todo.push_back({mid, iv.top_sum, iv.top_max});  // (mid, hi): S >= g(hi) >= top_sum
      todo.push_back({iv.lo, sol.sum, sol.max});                     // (lo, sol.max)
    }
  }
  if (best_stages.empty()) return {};
  if (best_iteration_s) *best_iteration_s = best;
  return best_stages;
}

int64_t SyncModel::min_memory_needed(const SyncConfig& cfg) const {
  // Binary search on the limit: feasibility is monotone in it.
  SyncConfig c = cfg;
  Solved sol;
  int64_t lo = 0, hi = 1;
  auto fits = [&](int64_t lim) {
    c.memory_limit = lim;
    return solve(c, kInf, sol);
  };
  while (!fits(hi)) {
    if (hi > (int64_t{1} << 60)) return -1;
    hi *= 2;
  }
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace pw::planner
