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

namespace {
struct Entry {
  double mx, sum;
  int j;      // end of the first stage
  bool rec;
  int idx;    // entry in front[q-1][j]
};
}  // namespace

std::vector<SyncStage> SyncModel::optimize(const SyncConfig& cfg, double* best_iteration_s) const {
  const int n = this->n();
  const int P = max_stages();
  const double scale = static_cast<double>(cfg.micro_batch_size) / profile_batch_;
  const double m1 = cfg.m - 1;
  double best = best_iteration_s ? *best_iteration_s : std::numeric_limits<double>::infinity();
  int best_q = -1, best_idx = -1;
  std::vector<std::vector<std::vector<Entry>>> front(P + 1, std::vector<std::vector<Entry>>(n + 1));
  std::vector<bool> recs;
  if (cfg.recompute != 1) recs.push_back(false);
  if (cfg.recompute != 0) recs.push_back(true);
  std::vector<Entry> cand;
  for (int q = 1; q <= P; ++q) {
    for (int k = 0; k <= n - q; ++k) {
      cand.clear();
      const int jmax = q == 1 ? n : n - (q - 1);
      const int jmin = q == 1 ? n : k + 1;
      for (int j = jmin; j <= jmax; ++j) {
        const double base_compute = ((fwd_[j] - fwd_[k]) + (bwd_[j] - bwd_[k])) * scale * 1e-9;
        if (m1 * base_compute + base_compute >= best && q > 1) break;
        for (bool rec : recs) {
          SyncStageCost c = stage(k, j, rec, q, 0, cfg);
          if (cfg.memory_limit > 0 && c.memory_bytes > cfg.memory_limit) continue;
          const double t = c.compute_s;
          if (q == 1) {
            if (m1 * t + t < best) cand.push_back({t, t, n, rec, -1});
            continue;
          }
          const double x = cut_s(j, q, scale);
          const auto& rest = front[q - 1][j];
          for (int e = 0; e < static_cast<int>(rest.size()); ++e) {
            const double mx = std::max({t, x, rest[e].mx});
            const double sum = t + 2 * x + rest[e].sum;
            if (m1 * mx + sum >= best) continue;
            cand.push_back({mx, sum, j, rec, e});
          }
        }
      }
      std::sort(cand.begin(), cand.end(), [](const Entry& a, const Entry& b) {
        return a.mx != b.mx ? a.mx < b.mx : a.sum < b.sum;
      });
      auto& f = front[q][k];
      for (const Entry& c : cand)
        if (f.empty() || c.sum < f.back().sum) f.push_back(c);
      if (k == 0)
        for (int e = 0; e < static_cast<int>(f.size()); ++e) {
          const double v = m1 * f[e].mx + f[e].sum;
          if (v < best) {
            best = v;
            best_q = q;
            best_idx = e;
          }
        }
    }
  }
  if (best_q < 0) return {};
  if (best_iteration_s) *best_iteration_s = best;
  std::vector<SyncStage> out;
  int k = 0, q = best_q, idx = best_idx;
  while (q >= 1) {
    const Entry& e = front[q][k][idx];
    out.push_back({k, e.j, e.rec});
    k = e.j;
    idx = e.idx;
    --q;
  }
  return out;
}

int64_t SyncModel::min_memory_needed(const SyncConfig& cfg) const {
  // Binary search on the limit: feasibility is monotone in it.
  SyncConfig c = cfg;
  int64_t lo = 0, hi = 1;
  auto fits = [&](int64_t lim) {
    c.memory_limit = lim;
    double b = std::numeric_limits<double>::infinity();
    return !optimize(c, &b).empty();
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
