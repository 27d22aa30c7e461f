#include "planner/sync_dp.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "models/error.h"

namespace pw::planner {

SyncModel::SyncModel(const models::Profile& p, const models::Cluster& c)
    : cluster_(c), profile_batch_(p.micro_batch), starts_(models::stage_starts_allowed(p)) {
  const int n = static_cast<int>(p.layers.size());
  restricted_ = std::find(starts_.begin(), starts_.end(), false) != starts_.end();
  fwd_.assign(n + 1, 0);
  bwd_.assign(n + 1, 0);
  stash_.assign(n + 1, 0);
  pending_.assign(n + 1, 0);
  param_.assign(n + 1, 0);
  work_.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    const auto& l = p.layers[i];
    const bool load = l.is_data_loading;
    fwd_[i + 1] = fwd_[i] + (load ? 0 : l.forward_ns);
    bwd_[i + 1] = bwd_[i] + (load ? 0 : l.backward_ns());
    stash_[i + 1] = stash_[i] + l.stash_bytes;
    pending_[i + 1] = pending_[i] + l.weight_pending_bytes;
    param_[i + 1] = param_[i] + l.parameter_bytes;
    work_[i + 1] = std::max(work_[i], l.workspace_bytes);
  }
  load_.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) load_[i + 1] = load_[i] + (p.layers[i].is_data_loading ? p.layers[i].output_bytes : 0);
  work_max_.assign(1, std::vector<int64_t>(n, 0));
  for (int i = 0; i < n; ++i) work_max_[0][i] = p.layers[i].workspace_bytes;
  for (int l = 1; (1 << l) <= n; ++l) {
    work_max_.emplace_back(n - (1 << l) + 1, 0);
    for (int i = 0; i + (1 << l) <= n; ++i)
      work_max_[l][i] = std::max(work_max_[l - 1][i], work_max_[l - 1][i + (1 << (l - 1))]);
  }
  std::vector<int> last_use(n, -1);
  for (const auto& e : p.edges) last_use[e.from] = std::max(last_use[e.from], e.to);
  std::vector<int64_t> diff(n + 2, 0), diff_all(n + 2, 0);
  for (int u = 0; u < n; ++u)
    if (last_use[u] > u) {
      diff_all[u + 1] += p.layers[u].output_bytes;
      diff_all[last_use[u] + 1] -= p.layers[u].output_bytes;
      if (p.layers[u].is_data_loading) continue;
      diff[u + 1] += p.layers[u].output_bytes;
      diff[last_use[u] + 1] -= p.layers[u].output_bytes;
    }
  const int L = static_cast<int>(c.levels().size());
  period_ = L >= 2 ? c.group_size(L - 2) : 1;
  cut_bytes_.assign(n + 1, 0);
  in_bytes_.assign(n + 1, 0);
  int64_t run = 0, run_all = 0;
  for (int c = 0; c <= n; ++c) {
    run += diff[c];
    run_all += diff_all[c];
    cut_bytes_[c] = (c == 0 || c == n) ? 0 : run;
    in_bytes_[c] = (c == 0 || c == n) ? 0 : run_all;
  }
}

int64_t SyncModel::work_range(int a, int b) const {
  const int l = std::bit_width(static_cast<unsigned>(b - a)) - 1;  // floor(log2(b - a)), b > a
  return std::max(work_max_[l][a], work_max_[l][b - (1 << l)]);
}

namespace {

// Micro-batches a stage with q of p stages left holds at once: `kept` stashes (or inputs, with
// re-materialization) and `reforward` re-materialized stashes (see sync_dp.h).
struct Held {
  int64_t kept = 1, reforward = 1;
};

Held held(const SyncConfig& cfg, int q, int p) {
  const int64_t m = cfg.m;
  if (cfg.gpipe_memory) return {m, 1};
  if (cfg.zb_memory) return {std::min<int64_t>(p, m), std::min<int64_t>(p - q + 1, m)};
  return {std::min<int64_t>(q, m), 1};
}

}  // namespace

int SyncModel::max_stages() const { return std::min(cluster_.num_devices(), n()); }

double SyncModel::cut_s(int c, int q, double scale) const {
  // Stage with q stages left sits on device q-1, the next one on q-2.
  const int level = cluster_.level_between(q - 1, q - 2);
  const auto& lv = cluster_.levels()[level];
  return static_cast<double>(lv.latency_ns) * 1e-9 + cut_bytes_[c] * scale / lv.bandwidth_bytes_per_s;
}

SyncStageCost SyncModel::stage(int a, int b, bool rec, int q, int p, const SyncConfig& cfg) const {
  const double scale = static_cast<double>(cfg.micro_batch_size) / profile_batch_;
  SyncStageCost s;
  s.forward_s = (fwd_[b] - fwd_[a]) * scale * 1e-9;
  s.backward_s = (bwd_[b] - bwd_[a]) * scale * 1e-9 + (rec ? s.forward_s : 0.0);
  s.compute_s = s.forward_s + s.backward_s;
  const Held h = held(cfg, q, p);
  s.persistent_bytes = ceil_bytes((param_[b] - param_[a]) * cfg.persistent_per_parameter_byte);
  const double stash = (stash_[b] - stash_[a]) * scale;
  double act = rec ? h.kept * (input_bytes(a, b) * scale) + h.reforward * stash : h.kept * stash;
  // zb-h1 holds what B keeps for W from B(j) to W(j): the same count as re-forward stashes.
  if (cfg.zb_memory) act += h.reforward * ((pending_[b] - pending_[a]) * scale);
  s.working_bytes = ceil_bytes(work_range(a, b) * scale);
  s.activation_bytes = ceil_bytes(act) + s.working_bytes;  // working set included
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
  ev.busy_of_first_stage_s = cfg.m * ev.stages[0].compute_s;
  return ev;
}

// solve()'s result and scratch. One per thread, reused by every optimize() and
// min_memory_needed() call on it: a sweep makes thousands of solves, and allocating (and
// page-faulting) the tables afresh for each showed up in its profile. Neither call nests in
// another, and solve() re-enters only to redo the same `out`.
struct SyncModel::Solved {
  double sum = 0;  // S, computed in the DP's order
  double max = 0;  // M of the partition found
  std::vector<SyncStage> stages;
  // Scratch reused between evaluations (per class c: row c of (n + 1) entries).
  std::vector<double> G, w, wr;
  std::vector<int> next, prev_class, plain_end, sparse;
  std::vector<uint8_t> rec;
  std::vector<std::vector<int>> deques;
  std::vector<size_t> heads, tails;
};

SyncModel::Solved& SyncModel::thread_scratch() {
  thread_local Solved scratch;
  return scratch;
}

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// Stage classes: stages with q stages left (q = 1 is the last stage) that cost the same. In
// "exact" mode class c holds q = c + 1 only (c < P). Otherwise q < q0 are exact and q >= q0 fall
// into `period` classes by (q - q0) mod period: the in-flight count min(q, m) is constant from
// q0 = m on (gpipe: q0 = 1) and the link after a stage depends on q modulo the inner group size.
struct StageClass {
  int q_rep = 1;  // a member q used for the link level (>= 2 when has_cut)
  int64_t inflight = 1;
  int64_t reforward = 1;   // re-materialized stashes held at once (an upper bound for the class)
  bool has_last = false;   // q = 1 is a member: the stage may end the pipeline
  bool has_cut = false;    // a member q >= 2: the stage may be followed by others
  int prev[2] = {-1, -1};  // classes of q - 1 for the members q >= 2
};
}  // namespace

double SyncModel::cut_level_s(int c, int level, double scale) const {
  const auto& lv = cluster_.levels()[level];
  return static_cast<double>(lv.latency_ns) * 1e-9 + cut_bytes_[c] * scale / lv.bandwidth_bytes_per_s;
}

bool SyncModel::solve(const SyncConfig& cfg, double bound, Solved& out, bool exact) const {
  ++last_evaluations_;
  const int n = this->n();
  const int P = max_stages();
  const double scale = static_cast<double>(cfg.micro_batch_size) / profile_batch_;
  const double s = scale * 1e-9;
  // zb-h1: the number of stages is bounded by P (held() grows with p).
  auto inflight = [&](int q) -> int64_t { return held(cfg, q, P).kept; };
  const int q0 = cfg.gpipe_memory ? 1 : cfg.m;
  // zb-h1's re-forward count depends on q itself: exact classes only.
  const bool periodic =
      !exact && !cfg.exact_stage_classes && !cfg.zb_memory && static_cast<int64_t>(q0) + 2 * period_ <= P;
  std::vector<StageClass> cls;
  if (!periodic) {
    for (int q = 1; q <= P; ++q) {
      StageClass c;
      c.q_rep = q;
      c.inflight = inflight(q);
      c.reforward = held(cfg, q, P).reforward;
      c.has_last = q == 1;
      c.has_cut = q >= 2;
      c.prev[0] = q - 2;
      cls.push_back(c);
    }
  } else {
    for (int q = 1; q < q0; ++q) {
      StageClass c;
      c.q_rep = q;
      c.inflight = inflight(q);
      c.has_last = q == 1;
      c.has_cut = q >= 2;
      c.prev[0] = q - 2;
      cls.push_back(c);
    }
    for (int r = 0; r < period_; ++r) {
      StageClass c;
      const int q = q0 + r;
      c.q_rep = q >= 2 ? q : q + period_;
      c.inflight = inflight(q);
      c.has_last = q == 1;
      c.has_cut = true;
      const int self = static_cast<int>(cls.size());
      if (r > 0) {
        c.prev[0] = self - 1;
      } else {
        c.prev[0] = self + period_ - 1;   // q - 1 >= q0 (q = q0 + t * period, t >= 1)
        if (q0 >= 2) c.prev[1] = q0 - 2;  // q - 1 = q0 - 1
      }
      cls.push_back(c);
    }
  }
  const int nc = static_cast<int>(cls.size());
  std::vector<int> level(nc, -1);
  for (int c = 0; c < nc; ++c)
    if (cls[c].has_cut) level[c] = cluster_.level_between(cls[c].q_rep - 1, cls[c].q_rep - 2);
  const size_t W = static_cast<size_t>(n) + 1;
  const size_t cells = static_cast<size_t>(nc) * W;
  out.G.assign(cells, kInf);
  out.next.assign(cells, -1);
  out.prev_class.assign(cells, -1);
  out.rec.assign(cells, 0);
  out.w.assign(cells, kInf);
  out.plain_end.assign(nc, n - 1);
  // Per class a deque of cut positions in dq[head, tail): the front holds the newest (smallest
  // j), values decrease towards the back; new positions enter at the front.
  out.deques.resize(nc);
  out.heads.assign(nc, W);
  out.tails.assign(nc, W);
  for (int c = 0; c < nc; ++c) out.deques[c].resize(W);
  const bool allow_plain = cfg.recompute != 1, allow_rec = cfg.recompute != 0;
  auto persist = [&](int a, int b) { return ceil_bytes((param_[b] - param_[a]) * cfg.persistent_per_parameter_byte); };
  const int64_t L = cfg.memory_limit;
  auto plain_time_ok = [&](int a, int b) { return ((fwd_[b] - fwd_[a]) + (bwd_[b] - bwd_[a])) * s <= bound; };
  auto rec_time_ok = [&](int a, int b) { return (2 * (fwd_[b] - fwd_[a]) + (bwd_[b] - bwd_[a])) * s <= bound; };
  auto working = [&](int a, int b) { return ceil_bytes(work_range(a, b) * scale); };
  auto zb_pending = [&](int a, int b, const StageClass& sc) {
    return cfg.zb_memory ? sc.reforward * ((pending_[b] - pending_[a]) * scale) : 0.0;
  };
  auto plain_ok = [&](int a, int b, const StageClass& sc) {
    if (!plain_time_ok(a, b)) return false;
    if (L <= 0) return true;
    return persist(a, b) + working(a, b) +
               ceil_bytes(sc.inflight * ((stash_[b] - stash_[a]) * scale) + zb_pending(a, b, sc)) <=
           L;
  };
  auto rec_ok = [&](int a, int b, const StageClass& sc) {
    if (!rec_time_ok(a, b)) return false;
    if (L <= 0) return true;
    return persist(a, b) + working(a, b) +
               ceil_bytes(sc.inflight * (input_bytes(a, b) * scale) + sc.reforward * ((stash_[b] - stash_[a]) * scale) +
                          zb_pending(a, b, sc)) <=
           L;
  };
  // Re-materialization can only help where a plain stage does not fit in memory.
  bool rec_useful = allow_rec;
  if (allow_rec && allow_plain && L > 0) {
    const int64_t worst = persist(0, n) + working(0, n) + ceil_bytes(inflight(P) * ((stash_[n] - stash_[0]) * scale));
    if (worst <= L) rec_useful = false;
  }
  // Sparse tables (per class) of the first minimum of wr over [j, j + 2^l), filled as j is finished.
  int lg = 1;
  while ((1 << lg) <= n) ++lg;
  if (rec_useful) {
    out.wr.assign(cells, kInf);
    out.sparse.assign(static_cast<size_t>(nc) * lg * W, 0);
  }
  auto sp = [&](int c, int l, int j) -> int& { return out.sparse[(static_cast<size_t>(c) * lg + l) * W + j]; };
  auto better = [&](int c, int a, int b) { return out.wr[c * W + b] < out.wr[c * W + a] ? b : a; };
  for (int k = n - 1; k >= 0; --k) {
    // Cut position j = k + 1 is final: enter it into every class's window.
    const int j = k + 1;
    if (j <= n - 1)
      for (int c = 0; c < nc; ++c) {
        if (!cls[c].has_cut) continue;
        double rest = kInf;
        int pc = -1;
        for (int pr : cls[c].prev)
          if (pr >= 0 && out.G[pr * W + j] < rest) {
            rest = out.G[pr * W + j];
            pc = pr;
          }
        double v = kInf;
        if (rest < kInf && starts_[j]) {  // a stage may begin at j
          const double x = cut_level_s(j, level[c], scale);
          if (x <= bound) v = 2 * x + rest;
        }
        out.w[c * W + j] = v;
        out.prev_class[c * W + j] = pc;  // prev class of the stage starting at j (read via j)
        auto& dq = out.deques[c];
        size_t& head = out.heads[c];
        while (head < out.tails[c] && out.w[c * W + dq[head]] >= v) ++head;
        dq[--head] = j;
        if (rec_useful) {
          out.wr[c * W + j] = v == kInf ? kInf : fwd_[j] * s + v;
          sp(c, 0, j) = j;
          for (int l = 1; l < lg && j + (1 << l) - 1 <= n - 1; ++l)
            sp(c, l, j) = better(c, sp(c, l - 1, j), sp(c, l - 1, j + (1 << (l - 1))));
        }
      }
    for (int c = 0; c < nc; ++c) {
      const StageClass& sc = cls[c];
      const size_t cell = c * W + k;
      double best = kInf;
      int bj = -1;
      bool brec = false;
      if (sc.has_last) {
        if (allow_plain && plain_ok(k, n, sc)) {
          best = 0;
          bj = n;
        } else if (rec_useful && rec_ok(k, n, sc)) {
          best = (fwd_[n] - fwd_[k]) * s;
          bj = n;
          brec = true;
        }
      }
      if (sc.has_cut && k + 1 <= n - 1) {
        int& J = out.plain_end[c];
        if (!allow_plain) {
          J = k;
        } else {
          if (J > n - 1) J = n - 1;
          while (J > k && !plain_ok(k, J, sc)) --J;
        }
        auto& dq = out.deques[c];
        size_t& tail = out.tails[c];
        while (out.heads[c] < tail && dq[tail - 1] > J) --tail;
        if (out.heads[c] < tail && out.w[c * W + dq[tail - 1]] < best) {
          best = out.w[c * W + dq[tail - 1]];
          bj = dq[tail - 1];
          brec = false;
        }
        // Re-materialized stages past the plain window; only when memory (not time) ended it.
        if (rec_useful && J + 1 <= n - 1 && (!allow_plain || (rec_time_ok(k, J + 1) && !plain_ok(k, J + 1, sc))) &&
            rec_ok(k, J + 1, sc)) {
          int lo = J + 1, step = 1, hi = lo;
          while (hi < n - 1 && rec_ok(k, std::min(n - 1, lo + step), sc)) {
            lo = std::min(n - 1, lo + step);
            step *= 2;
            hi = lo;
          }
          hi = std::min(n - 1, lo + step);
          if (hi > lo && rec_ok(k, hi, sc)) lo = hi;
          while (hi - lo > 1) {
            const int mid = lo + (hi - lo) / 2;
            (rec_ok(k, mid, sc) ? lo : hi) = mid;
          }
          const int a = J + 1, e = lo;  // range [a, e]
          const int l = std::bit_width(static_cast<unsigned>(e - a + 1)) - 1;
          const int jm = better(c, sp(c, l, a), sp(c, l, e - (1 << l) + 1));
          const double v = out.wr[c * W + jm] - fwd_[k] * s;
          if (out.wr[c * W + jm] < kInf && v < best) {
            best = v;
            bj = jm;
            brec = true;
          }
        }
      }
      out.G[cell] = best;
      out.next[cell] = bj;
      out.rec[cell] = brec;
    }
  }
  int c = -1;
  double best = kInf;
  for (int cc = 0; cc < nc; ++cc)
    if (out.G[cc * W] < best) {
      best = out.G[cc * W];
      c = cc;
    }
  if (c < 0) return false;
  out.stages.clear();
  out.sum = (fwd_[n] + bwd_[n]) * s + best;
  out.max = 0;
  int k = 0;
  while (true) {
    const size_t cell = c * W + k;
    const int j = out.next[cell];
    const bool r = out.rec[cell];
    out.stages.push_back({k, j, r});
    out.max = std::max(
        out.max, (r ? 2 * (fwd_[j] - fwd_[k]) + (bwd_[j] - bwd_[k]) : (fwd_[j] - fwd_[k]) + (bwd_[j] - bwd_[k])) * s);
    if (j == n) break;
    out.max = std::max(out.max, cut_level_s(j, level[c], scale));
    c = out.prev_class[c * W + j];
    k = j;
  }
  if (periodic && static_cast<int>(out.stages.size()) > P) return solve(cfg, bound, out, true);
  return true;
}

std::vector<SyncStage> SyncModel::optimize(const SyncConfig& cfg, double* best_iteration_s) const {
  last_evaluations_ = 0;
  const double m1 = cfg.m - 1;
  double best = best_iteration_s ? *best_iteration_s : kInf;
  std::vector<SyncStage> best_stages;
  Solved& sol = thread_scratch();
  auto consider = [&](const Solved& s) {
    const double f = s.sum + m1 * s.max;
    if (f < best) {
      best = f;
      best_stages = s.stages;
    }
  };
  // Every partition has M >= the slowest layer and >= the mean stage time, and S >= the sum of
  // the layers' times (the DP adds its non-negative rest to exactly that), so no partition
  // beats an incumbent below sum + (m - 1) lower: then not one DP is needed.
  const int n = this->n();
  const double s = static_cast<double>(cfg.micro_batch_size) / profile_batch_ * 1e-9;
  double lower = (fwd_[n] + bwd_[n]) * s / max_stages();
  for (int l = 0; l < n; ++l) lower = std::max(lower, ((fwd_[l + 1] - fwd_[l]) + (bwd_[l + 1] - bwd_[l])) * s);
  lower = std::nextafter(lower * (1 - 1e-12), 0.0);
  if ((fwd_[n] + bwd_[n]) * s + m1 * lower >= best) return {};
  if (!solve(cfg, kInf, sol, false)) return {};
  consider(sol);
  if (m1 > 0) {
    // Intervals (lo, hi) of the bottleneck still to search, with g(top) known for the part above.
    struct Interval {
      double lo, top_sum, top_max;
    };
    std::vector<Interval> todo{{lower, sol.sum, sol.max}};
    while (!todo.empty()) {
      Interval iv = todo.back();
      todo.pop_back();
      // Partitions with M in [top_max, top] cannot beat the one found at top.
      const double hi = std::nextafter(iv.top_max, 0.0);
      if (!(hi > iv.lo)) continue;
      if (iv.top_sum + m1 * iv.lo >= best) continue;
      // Bisect (geometric when the range is wide), walk down when it is narrow.
      double mid = iv.lo > 0 ? iv.lo + (hi - iv.lo) / 2 : hi / 2;
      if (iv.lo > 0 && hi - iv.lo < 1e-9 * hi) mid = hi;
      if (!(mid > iv.lo)) mid = hi;
      if (!solve(cfg, mid, sol, false)) {
        // Nothing fits under mid: search (mid, hi) only.
        if (mid < hi) todo.push_back({mid, iv.top_sum, iv.top_max});
        continue;
      }
      consider(sol);
      if (mid < hi) todo.push_back({mid, iv.top_sum, iv.top_max});  // (mid, hi): S >= g(hi) >= top_sum
      todo.push_back({iv.lo, sol.sum, sol.max});                    // (lo, sol.max)
    }
  }
  if (best_stages.empty()) return {};
  if (best_iteration_s) *best_iteration_s = best;
  return best_stages;
}

int64_t smallest_fitting_limit(const std::function<bool(int64_t)>& fits, int64_t guess, int64_t below) {
  int64_t lo = 0, hi = 0;  // fits(hi) once hi > 0; lo: 0, or a limit where it does not hold
  if (below <= kMaxFittingLimit) {
    if (below <= 1 || !fits(below - 1)) return -1;
    hi = below - 1;
  } else {
    // Doubling stops at the range's end itself, so the range does not depend on the guess.
    hi = std::clamp<int64_t>(guess, 1, kMaxFittingLimit);
    while (!fits(hi)) {
      if (hi == kMaxFittingLimit) return -1;
      lo = hi;
      hi = std::min(2 * hi, kMaxFittingLimit);
    }
  }
  if (lo == 0) {  // hi holds and nothing below it was tried: down from the guess while it holds
    int64_t down = std::clamp<int64_t>(guess, 1, hi);
    if (down == hi) down = hi / 2;
    while (down >= 1 && fits(down)) {
      hi = down;
      down = hi / 2;
    }
    lo = down;  // 0 (never tried: limits are >= 1) or a limit where it does not hold
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  return hi;
}

int64_t SyncModel::memory_floor(const SyncConfig& cfg) const {
  const double scale = static_cast<double>(cfg.micro_batch_size) / profile_batch_;
  const int n = this->n();
  int64_t floor = ceil_bytes(param_[n] * cfg.persistent_per_parameter_byte) / std::max(1, max_stages());
  for (int i = 0; i < n; ++i)
    floor = std::max(floor, ceil_bytes((param_[i + 1] - param_[i]) * cfg.persistent_per_parameter_byte) +
                                ceil_bytes(static_cast<double>(work_max_[0][i]) * scale));
  return std::max<int64_t>(floor, 1);
}

int64_t SyncModel::min_memory_needed(const SyncConfig& cfg, int64_t below) const {
  // Search on the limit: feasibility is monotone in it.
  SyncConfig c = cfg;
  Solved& sol = thread_scratch();
  return smallest_fitting_limit(
      [&](int64_t lim) {
        c.memory_limit = lim;
        return solve(c, kInf, sol, false);
      },
      memory_floor(cfg), below);
}

}  // namespace pw::planner
