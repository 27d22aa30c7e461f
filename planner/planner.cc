#include "planner/planner.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <memory>
#include <sstream>

#include "models/error.h"
#include "models/optimizer_memory.h"
#include "models/pipedream_import.h"
#include "models/profile_points.h"
#include "planner/cut_states.h"
#include "planner/plan_figures.h"
#include "planner/replicated_dp.h"
#include "planner/replicated_sync.h"
#include "planner/sync_dp.h"
#include "planner/uniform_sync.h"

namespace pw::planner {
namespace {

constexpr int kMaxPipeDreamStates = 5000;
constexpr int64_t kUnknownPipeDreamBatch = 64;

// The baselines cut between segments: runs of layers from one allowed stage start
// (models::stage_starts_allowed) to the next; with every start allowed, segments are layers.
std::vector<SyncStage> baseline_split(const models::Profile& p, int stages, bool greedy) {
  const int L = static_cast<int>(p.layers.size());
  const std::vector<bool> ok = models::stage_starts_allowed(p);
  std::vector<int> at;  // segment k is layers [at[k], at[k + 1]); at[n] = L
  for (int i = 0; i < L; ++i)
    if (ok[i]) at.push_back(i);
  const int n = static_cast<int>(at.size());
  at.push_back(L);
  stages = std::min(stages, n);
  std::vector<SyncStage> out;
  if (!greedy) {
    for (int s = 0; s < stages; ++s) out.push_back({at[n * s / stages], at[n * (s + 1) / stages], false});
    return out;
  }
  // GPipe: cut where cumulative compute first reaches s/p of the total; every stage non-empty.
  std::vector<int64_t> cum(n + 1, 0);
  for (int k = 0; k < n; ++k) {
    cum[k + 1] = cum[k];
    for (int i = at[k]; i < at[k + 1]; ++i) cum[k + 1] += p.layers[i].compute_ns();
  }
  int begin = 0;
  for (int s = 1; s < stages; ++s) {
    const double target = static_cast<double>(cum[n]) * s / stages;
    int c = begin + 1;
    while (c < n - (stages - s) && cum[c] < target) ++c;
    out.push_back({at[begin], at[c], false});
    begin = c;
  }
  out.push_back({at[begin], L, false});
  return out;
}

struct SyncBest {
  bool found = false;
  double iteration = std::numeric_limits<double>::infinity();
  SyncConfig cfg;
  std::vector<SyncStage> stages;
};

struct SyncSetup {
  std::vector<int> ms;
  bool gpipe = false;
  bool zb = false;
  int recompute = -1;
  double ppb = 4;

  // The DP's configuration for m micro-batches of the batch (the last may be smaller).
  SyncConfig config(int m, int64_t batch, int64_t memory_limit) const {
    SyncConfig cfg;
    cfg.m = m;
    cfg.micro_batch_size = (batch + m - 1) / m;
    cfg.gpipe_memory = gpipe;
    cfg.zb_memory = zb;
    cfg.recompute = recompute;
    cfg.memory_limit = memory_limit;
    cfg.persistent_per_parameter_byte = ppb;
    return cfg;
  }
};

// Repeated identical layers (a GPT's blocks) are partitioned by arithmetic over the run
// (planner/uniform_sync.h) where that is exact; null (the DP everywhere) when the profile has no
// such run or the request asks for exact partitioning.
std::unique_ptr<UniformSync> uniform_solver(const SyncModel& model, const models::Profile& p, const PlanRequest& req) {
  if (req.partitioner != Partitioner::dp || req.exact_partitioning) return nullptr;
  std::optional<UniformRun> run = find_uniform_run(p);
  return run ? std::make_unique<UniformSync>(model, *run) : nullptr;
}

// `fast`: the solver for repeated layers, used wherever it gives the DP's answer (else null).
SyncBest best_sync(const SyncModel& model, const models::Profile& p, const PlanRequest& req, const SyncSetup& su,
                   int64_t batch, int64_t mem, const UniformSync* fast = nullptr) {
  SyncBest best;
  for (int m : su.ms) {
    if (m > batch) continue;
    SyncConfig cfg = su.config(m, batch, mem);
    if (req.partitioner == Partitioner::dp) {
      double b = best.iteration;
      auto st = fast && fast->applies(cfg) ? fast->optimize(cfg, &b) : model.optimize(cfg, &b);
      if (!st.empty() && b < best.iteration) best = {true, b, cfg, st};
      continue;
    }
    auto st = baseline_split(p, model.max_stages(), req.partitioner == Partitioner::gpipe_greedy);
    for (int rec : {0, 1}) {
      if ((su.recompute == 0 && rec) || (su.recompute == 1 && !rec)) continue;
      for (auto& s : st) s.recompute = rec;
      SyncEvaluation ev = model.evaluate(st, cfg);
      if (ev.fits && ev.iteration_s < best.iteration) best = {true, ev.iteration_s, cfg, st};
      if (ev.fits) break;  // auto: re-materialize only when needed
    }
  }
  return best;
}

// The micro-batch counts to search: every divisor of the batch for count 0 ("auto"), else the
// count alone, which must divide the batch.
std::vector<int> micro_batch_counts(int count, int64_t batch) {
  std::vector<int> divisors;
  for (int64_t d = 1; d <= batch && d <= 1 << 20; ++d)
    if (batch % d == 0) divisors.push_back(static_cast<int>(d));
  if (count == 0) return divisors;
  if (count < 0)
    throw InputError("--micro-batches: expected \"auto\" or a positive integer, got " + std::to_string(count));
  const std::string s = std::to_string(count);
  const int64_t v = count;
  if (v > batch)
    throw InputError("--micro-batches: " + s + " micro-batches need a batch of at least " + s + " samples (batch is " +
                     std::to_string(batch) + ")");
  if (batch % v != 0) {
    std::string shown;
    for (size_t i = 0; i < divisors.size() && i < 16; ++i) shown += (i ? ", " : "") + std::to_string(divisors[i]);
    throw InputError("--micro-batches: " + s + " does not divide the batch of " + std::to_string(batch) +
                     " samples (counts that do: " + shown + ")");
  }
  return {static_cast<int>(v)};
}

// The inputs' content hashes are not set here: the tool records them where it embeds the
// inputs in the plan (set_plan_inputs), from the same JSON, instead of every make_plan call
// serializing its whole profile and cluster (30% of planning PipeDream's reference runs).
void fill_common(Plan& plan, const models::Profile& p, const models::Cluster& c, const PlanRequest& req) {
  plan.model = p.model;
  plan.cluster_name = c.name();
  plan.objective = to_string(req.objective);
  plan.partitioner = to_string(req.partitioner);
}

// The cluster seen by stages of k cores each: the innermost levels' counts divided by k (as far
// as they divide), so device d of the result is cores d*k .. d*k + k - 1 of c.
models::Cluster cluster_per_stage(const models::Cluster& c, int k) {
  if (k <= 1) return c;
  std::vector<models::Level> lv = c.levels();
  int rest = k;
  for (auto& l : lv) {
    if (rest == 1) break;
    if (l.count % rest == 0) {
      l.count /= rest;
      rest = 1;
    } else if (rest % l.count == 0) {
      rest /= l.count;
      l.count = 1;
    } else {
      return models::Cluster(
          c.name(), c.device(),
          {{"stages", std::max(1, c.num_devices() / k), lv[0].bandwidth_bytes_per_s, lv[0].latency_ns}});
    }
  }
  if (rest != 1) return models::Cluster(c.name(), c.device(), {{"stages", 1, lv[0].bandwidth_bytes_per_s, 0}});
  return models::Cluster(c.name(), c.device(), lv);
}

// Per iteration, the slowest stage's optimizer step (the profile's step_ns).
double step_s(const models::Profile& p, const std::vector<SyncStage>& stages) {
  int64_t mx = 0;
  for (const auto& st : stages) {
    int64_t t = 0;
    for (int l = st.begin; l < st.end; ++l) t += p.layers[l].step_ns;
    mx = std::max(mx, t);
  }
  return static_cast<double>(mx) * 1e-9;
}

// A candidate of the joint search over threads per stage and micro-batch size.
struct PointChoice {
  int threads = 0;  // 0: the plain (single-point) search
  models::ProfileAt at;
  SyncBest best;
  double total = std::numeric_limits<double>::infinity();  // iteration + step
};

PlanOutcome plan_sync(const models::Profile& p, const models::Cluster& c, const PlanRequest& req, double ppb) {
  const int64_t batch = req.batch > 0 ? req.batch : p.micro_batch;
  SyncSetup su;
  su.ms = micro_batch_counts(req.micro_batches, batch);
  su.ppb = ppb;
  const ScheduleKind kind = req.schedule.value_or(ScheduleKind::one_f_one_b);
  if (kind != ScheduleKind::gpipe && kind != ScheduleKind::one_f_one_b && kind != ScheduleKind::zb_h1)
    throw InputError("--schedule: the sync objective plans gpipe, 1f1b or zb-h1, got \"" +
                     std::string(to_string(kind)) + "\"");
  su.gpipe = kind == ScheduleKind::gpipe;
  su.zb = kind == ScheduleKind::zb_h1;
  su.recompute = req.recompute == RecomputeChoice::on ? 1 : req.recompute == RecomputeChoice::off ? 0 : -1;
  const int64_t mem = req.memory_limit_bytes > 0 ? req.memory_limit_bytes : c.device().memory_bytes;
  for (const auto& l : p.layers) {
    const double need = l.parameter_bytes * ppb;
    if (mem > 0 && need > mem)
      throw InputError("memory limit " + std::to_string(mem) + " bytes is smaller than layer \"" + l.name +
                       "\" needs for weights and optimizer state (" + std::to_string(static_cast<int64_t>(need)) +
                       " bytes)");
  }
  // Measured (or per-size analytic) points: search threads per stage x micro-batch count
  // jointly, each (k, m) costed at its own point (models/profile_points.h).
  PointChoice win;
  std::unique_ptr<models::Cluster> win_cluster;
  std::vector<PlanCandidate> candidates;
  if (req.threads_per_stage < 0)
    throw InputError("threads per stage: expected >= 0, got " + std::to_string(req.threads_per_stage));
  if (!p.points.empty() && req.partitioner == Partitioner::dp) {
    std::vector<int> ks{0};
    if (p.source == "measured") {
      ks = models::measured_thread_counts(p);
      // One stage on all cores is always a candidate on a CPU.
      if (c.num_devices() > 1 && std::find(ks.begin(), ks.end(), c.num_devices()) == ks.end())
        ks.push_back(c.num_devices());
    }
    if (req.threads_per_stage > 0 && std::find(ks.begin(), ks.end(), req.threads_per_stage) == ks.end())
      throw InputError("threads per stage " + std::to_string(req.threads_per_stage) +
                       ": not a thread count of this measured profile or of this cluster");
    for (int k : ks) {
      if (k > c.num_devices() || (req.threads_per_stage > 0 && k != req.threads_per_stage)) continue;
      auto ck = std::make_unique<models::Cluster>(cluster_per_stage(c, k));
      for (int m : su.ms) {
        if (m > batch) continue;
        SyncSetup one = su;
        one.ms = {m};
        models::ProfileAt at = models::profile_at(p, (batch + m - 1) / m, k);
        SyncModel mk(at.profile, *ck);
        // An analytic profile's points (one per micro-batch size) have blocks as uniform as the
        // profile's own: the same exact fast path. Measured points keep the DP (their layers
        // differ, and ties between equal-cost partitions stay broken the DP's way).
        const std::unique_ptr<UniformSync> fast_k =
            p.source == "analytic" ? uniform_solver(mk, at.profile, req) : nullptr;
        SyncBest bb = best_sync(mk, at.profile, req, one, batch, mem, fast_k.get());
        if (!bb.found) continue;
        const double total = bb.iteration + step_s(at.profile, bb.stages);
        candidates.push_back({k, m, static_cast<int>(bb.stages.size()), total});
        if (total < win.total) {
          win.threads = k;
          win.at = std::move(at);
          win.best = bb;
          win.total = total;
          win_cluster = std::move(ck);
          ck = std::make_unique<models::Cluster>(cluster_per_stage(c, k));
        }
      }
    }
  }
  if (req.threads_per_stage > 0 && (p.points.empty() || req.partitioner != Partitioner::dp))
    throw InputError("threads per stage: needs a profile with measured points and the dp partitioner");
  const bool use_point = win.best.found;
  const models::Profile& pp = use_point ? win.at.profile : p;
  SyncModel model(pp, use_point ? *win_cluster : c);
  const std::unique_ptr<UniformSync> fast = use_point ? nullptr : uniform_solver(model, pp, req);
  PlanOutcome out;
  // A fixed thread count that no micro-batch count fits is infeasible, not a plan of another k.
  SyncBest best = use_point                   ? win.best
                  : req.threads_per_stage > 0 ? SyncBest{}
                                              : best_sync(model, p, req, su, batch, mem, fast.get());
  if (!best.found) {
    out.feasible = false;
    int64_t need = std::numeric_limits<int64_t>::max();
    // The least over the micro-batch counts: each search after the first only looks below the
    // least so far (one DP for a count that cannot beat it). The most micro-batches (the
    // smallest ones) usually need the least, so they go first.
    for (auto m = su.ms.rbegin(); m != su.ms.rend(); ++m) {
      if (*m > batch) continue;
      const SyncConfig cfg = su.config(*m, batch, 0);
      const int64_t v = fast && fast->applies_min_memory(cfg) ? fast->min_memory_needed(cfg, need)
                                                              : model.min_memory_needed(cfg, need);
      if (v > 0) need = std::min(need, v);
    }
    out.min_memory_bytes_to_fit = need;
    int64_t lo = 0, hi = batch;  // largest b < batch that fits
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      SyncSetup s2 = su;
      if (req.micro_batches == 0) s2.ms = micro_batch_counts(0, mid);
      (best_sync(model, p, req, s2, mid, mem, fast.get()).found ? lo : hi) = mid;
    }
    out.max_batch_that_fits = lo;
    out.reason = "no partition fits in " + std::to_string(mem) + " bytes per device";
    return out;
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const PlanCandidate& x, const PlanCandidate& y) { return x.predicted_s < y.predicted_s; });
  out.candidates = std::move(candidates);
  SyncEvaluation ev = model.evaluate(best.stages, best.cfg);
  Plan& plan = out.plan;
  fill_common(plan, p, c, req);
  plan.schedule = kind;
  plan.batch = batch;
  plan.micro_batch_size = best.cfg.micro_batch_size;
  plan.num_micro_batches = best.cfg.m;
  plan.remainder_rule = batch == best.cfg.m * best.cfg.micro_batch_size ? "none" : "last-smaller";
  const int ps = static_cast<int>(best.stages.size());
  const int cores = use_point && win.threads > 0 ? win.threads : 1;
  plan.num_devices_used = ps * cores;
  if (use_point) {
    plan.threads_per_stage = win.threads;
    plan.extrapolated = win.at.extrapolated;
    plan.extrapolation_note = win.at.note;
  }
  const double step = step_s(pp, best.stages);
  plan.predicted_step_ns = std::llround(step * 1e9);
  for (int s = 0; s < ps; ++s) {
    StagePlan sp;
    sp.first_layer = best.stages[s].begin;
    sp.end_layer = best.stages[s].end;
    for (int l = sp.first_layer; l < sp.end_layer; ++l) sp.layer_names.push_back(p.layers[l].name);
    sp.devices = {(ps - 1 - s) * cores};
    sp.recompute = best.stages[s].recompute;
    const auto& sc = ev.stages[s];
    sp.predicted.forward_ns = std::llround(sc.forward_s * 1e9);
    sp.predicted.backward_ns = std::llround(sc.backward_s * 1e9);
    sp.predicted.comm_ns = std::llround((sc.in_comm_s + sc.out_comm_s) * 1e9);
    sp.predicted.memory_bytes = sc.memory_bytes;
    sp.predicted.weights_optimizer_bytes = sc.persistent_bytes;
    sp.predicted.activation_bytes = sc.activation_bytes;
    plan.stages.push_back(std::move(sp));
  }
  plan.predicted.iteration_time_s = ev.iteration_s + step;
  plan.predicted.bottleneck_time_s = ev.bottleneck_s;
  // A profile whose costs are all zero predicts zero time: the throughput is then unknown (0),
  // never inf, which JSON cannot hold (the plan would say null and be rejected when read back).
  plan.predicted.throughput_samples_per_s =
      plan.predicted.iteration_time_s > 0 ? batch / plan.predicted.iteration_time_s : 0;
  // DESIGN.md: (cost - busy of the longest-span stage) / cost; in the closed form stage 0 spans
  // the whole iteration (its first F starts it, its last backward ends it).
  plan.predicted.bubble_rate = ev.iteration_s > 0 ? (ev.iteration_s - ev.busy_of_first_stage_s) / ev.iteration_s : 0;
  plan.predicted.peak_memory_bytes = ev.peak_memory_bytes;
  set_plan_figures(plan);
  out.feasible = true;
  return out;
}

// Per stage, per micro-batch: the transfer time of its input cut plus its output cut, one
// direction each (as the sync planner's comm_ns): latency + bytes / bandwidth of the level
// joining the two stages' first devices, bytes = the outputs of layers before the cut with a
// consumer after it (data-loading sources included for activations), scaled to the plan's batch.
void set_replicated_comm(Plan& plan, const models::Profile& p, const models::Cluster& c,
                         const std::vector<int>& stage_of, double scale) {
  const int S = plan.num_stages();
  std::vector<int64_t> cut(S, 0);  // cut[s]: bytes from stages <= s to stages > s
  std::vector<int> last(p.layers.size(), -1);
  for (const auto& e : p.edges) last[e.from] = std::max(last[e.from], stage_of[e.to]);
  for (size_t v = 0; v < p.layers.size(); ++v)
    for (int s = stage_of[v]; s < last[v] && s + 1 < S; ++s) cut[s] += p.layers[v].output_bytes;
  std::vector<int64_t> x(S, 0);
  for (int s = 0; s + 1 < S; ++s) {
    const int a = plan.stages[s].devices.at(0), b = plan.stages[s + 1].devices.at(0);
    if (a < 0 || b < 0 || a >= c.num_devices() || b >= c.num_devices() || a == b) continue;
    const auto& lv = c.levels()[c.level_between(a, b)];
    x[s] = lv.latency_ns + models::link_bytes_ns(lv, static_cast<double>(cut[s]) * scale);
  }
  for (int s = 0; s < S; ++s) plan.stages[s].predicted.comm_ns = x[s] + (s > 0 ? x[s - 1] : 0);
}

PlanOutcome plan_replicated(const models::Profile& p, const models::Cluster& c, const PlanRequest& req, double ppb) {
  const bool quirks = req.objective == Objective::pipedream;
  const int64_t batch = quirks ? p.micro_batch : (req.batch > 0 ? req.batch : p.micro_batch);
  if (req.schedule && *req.schedule != ScheduleKind::pipedream_async)
    throw InputError("--schedule: the " + std::string(to_string(req.objective)) +
                     " objective plans pipedream-async, got \"" + std::string(to_string(*req.schedule)) + "\"");
  CutStates states;
  if (quirks) {
    states = pipedream_states(p, kMaxPipeDreamStates);
    if (!states.complete) states = prefix_states(p, true);
  } else {
    states = prefix_states(p, false);
    // Module paths (a bridge export): a stage begins only where a submodule call begins.
    const std::vector<bool> ok = models::stage_starts_allowed(p);
    if (std::find(ok.begin(), ok.end(), false) != ok.end()) states = prefix_states_at_allowed_starts(states, p);
  }
  std::vector<ReplicatedLevel> levels;
  for (const auto& l : c.levels()) levels.push_back({l.count, l.bandwidth_bytes_per_s, l.latency_ns * 1e-9});
  ReplicatedOptions o;
  o.quirks = quirks;
  o.straight = req.straight;
  o.fewer_machines = req.fewer_devices;
  o.activation_comm = quirks ? req.activation_comm : true;
  const double scale = static_cast<double>(batch) / p.micro_batch;
  o.time_scale = 1e-9 * scale;
  o.activation_scale = scale;
  o.persistent_per_parameter_byte = ppb;
  if (quirks) {
    o.use_memory_constraint = req.memory_limit_bytes > 0;
    o.memory_bytes = static_cast<double>(req.memory_limit_bytes);
  } else {
    o.use_memory_constraint = true;
    o.memory_bytes = static_cast<double>(req.memory_limit_bytes > 0 ? req.memory_limit_bytes : c.device().memory_bytes);
  }
  ReplicatedResult r = replicated_partition(states, levels, o);
  PlanOutcome out;
  if (!r.feasible) {
    out.reason = req.straight ? "no straight pipeline fits (or fewer layers than devices)"
                              : "no replicated partition fits in memory";
    // Smallest memory: search the limit (feasibility is monotone in it).
    ReplicatedOptions o2 = o;
    int64_t lo = 0, hi = 1;
    auto fits = [&](int64_t lim) {
      o2.memory_bytes = static_cast<double>(lim);
      return replicated_partition(states, levels, o2).feasible;
    };
    o2.use_memory_constraint = false;
    if (replicated_partition(states, levels, o2).feasible) {
      o2.use_memory_constraint = true;
      while (!fits(hi)) hi *= 2;
      while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? hi : lo) = mid;
      }
      out.min_memory_bytes_to_fit = hi;
    } else {
      out.min_memory_bytes_to_fit = -1;
    }
    out.max_batch_that_fits = 0;
    return out;
  }
  const int n = static_cast<int>(p.layers.size());
  std::vector<int> stage_of(n, -1);
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const auto& st = r.stages[s];
    for (int v = 0; v < n; ++v)
      if (st.end - 1 >= 0 && states.members[st.end - 1].test(v) &&
          (st.start == 0 || !states.members[st.start - 1].test(v)))
        stage_of[v] = static_cast<int>(s);
  }
  for (int v = 0; v < n; ++v)  // dropped layers: inputs go first, tuple sinks with their producer
    if (stage_of[v] < 0) {
      int best = p.layers[v].is_data_loading ? 0 : -1;
      for (const auto& e : p.edges)
        if (e.to == v && stage_of[e.from] >= 0) best = std::max(best, stage_of[e.from]);
      stage_of[v] = std::max(best, 0);
    }
  std::vector<int> order;
  for (size_t s = 0; s < r.stages.size(); ++s)
    for (int v = 0; v < n; ++v)
      if (stage_of[v] == static_cast<int>(s)) order.push_back(v);
  Plan& plan = out.plan;
  fill_common(plan, p, c, req);
  plan.cut_family = states.family;
  bool identity = true;
  for (int k = 0; k < n; ++k) identity = identity && order[k] == k;
  if (!identity) plan.layer_order = order;
  plan.schedule = ScheduleKind::pipedream_async;
  plan.batch = batch;
  plan.micro_batch_size = batch;
  plan.num_micro_batches = 1;
  int pos = 0, used = 0;
  int64_t peak = 0;
  // In flight on a stage: ceil(devices of this and every later stage / its replicas).
  std::vector<int64_t> from_here(r.stages.size() + 1, 0);
  for (size_t s = r.stages.size(); s-- > 0;)
    from_here[s] = from_here[s + 1] + static_cast<int64_t>(r.stages[s].devices.size());
  for (size_t s = 0; s < r.stages.size(); ++s) {
    StagePlan sp;
    sp.first_layer = pos;
    int64_t f = 0, b = 0, par = 0, act = 0;
    while (pos < n && stage_of[order[pos]] == static_cast<int>(s)) {
      const auto& l = p.layers[order[pos]];
      sp.layer_names.push_back(l.name);
      if (!l.is_data_loading) {
        f += l.forward_ns;
        b += l.backward_ns();
      }
      par += l.parameter_bytes;
      act += l.stash_bytes;
      ++pos;
    }
    sp.end_layer = pos;
    sp.devices = r.stages[s].devices;
    used += sp.replicas();
    sp.predicted.forward_ns = std::llround(f * scale);
    sp.predicted.backward_ns = std::llround(b * scale);
    const int64_t inflight = (from_here[s] + sp.replicas() - 1) / sp.replicas();
    sp.predicted.weights_optimizer_bytes = static_cast<int64_t>(std::ceil(par * ppb));
    sp.predicted.activation_bytes = static_cast<int64_t>(std::ceil(inflight * act * scale + (inflight - 1) * par));
    sp.predicted.memory_bytes = sp.predicted.weights_optimizer_bytes + sp.predicted.activation_bytes;
    // Our ring all-reduce of the stage's gradients (planner/replicated_sync.h), for the table and
    // the simulator; the bottleneck above is the objective's own model.
    sp.predicted.allreduce_ns = ring_allreduce(c, sp.devices, par).total();
    peak = std::max(peak, sp.predicted.memory_bytes);
    plan.stages.push_back(std::move(sp));
  }
  plan.num_devices_used = used;
  set_replicated_comm(plan, p, c, stage_of, scale);
  plan.predicted.bottleneck_time_s = r.bottleneck_s;
  plan.predicted.iteration_time_s = r.bottleneck_s;
  plan.predicted.throughput_samples_per_s = r.bottleneck_s > 0 ? batch / r.bottleneck_s : 0;  // see above
  plan.predicted.bubble_rate = 0;
  plan.predicted.peak_memory_bytes = peak;
  set_plan_figures(plan);
  out.feasible = true;
  return out;
}

}  // namespace

PlanOutcome make_plan(const models::Profile& profile, const models::Cluster& cluster, const PlanRequest& req) {
  if (cluster.num_devices() < 1) throw InputError("cluster: expected at least one device");
  if (req.batch < 0) throw InputError("--batch: expected a positive integer");
  if (req.chunks != 0)
    throw InputError("--chunks: only with --schedule interleaved-1f1b, which sim::plan_with_prediction plans");
  if (req.objective != Objective::sync && req.partitioner != Partitioner::dp)
    throw InputError("--partitioner: baselines exist for the sync objective only");
  const auto& opt = models::find_optimizer(req.optimizer);
  const double ppb = opt.total() / opt.weight_bytes;
  if (profile.source == "pipedream" && req.objective != Objective::pipedream &&
      models::infer_pipedream_batch(profile) == 0) {
    // The profile does not say how many samples its numbers hold: --batch says it (else the default).
    models::Profile holds = profile;
    holds.micro_batch = req.batch > 0 ? req.batch : kUnknownPipeDreamBatch;
    return req.objective == Objective::sync ? plan_sync(holds, cluster, req, ppb)
                                            : plan_replicated(holds, cluster, req, ppb);
  }
  return req.objective == Objective::sync ? plan_sync(profile, cluster, req, ppb)
                                          : plan_replicated(profile, cluster, req, ppb);
}

std::string format_plan_table(const Plan& plan) {
  std::ostringstream os;
  os << "plan for " << plan.model << " on " << plan.cluster_name << ": objective " << plan.objective << ", partitioner "
     << plan.partitioner << ", schedule " << to_string(plan.schedule) << ", batch " << plan.batch << " = "
     << plan.num_micro_batches << " x " << plan.micro_batch_size;
  if (plan.threads_per_stage > 0) os << ", " << plan.threads_per_stage << " core(s) per stage";
  os << "\n";
  if (plan.extrapolated)
    os << "warning: costs extrapolated beyond the measured points: " << plan.extrapolation_note << "\n";
  os << std::left << std::setw(6) << "stage" << std::setw(14) << "layers" << std::setw(10) << "replicas" << std::setw(8)
     << "recomp" << std::setw(12) << "fwd ms" << std::setw(12) << "bwd ms" << std::setw(12) << "comm ms"
     << std::setw(14) << "allreduce ms"
     << "memory MiB\n";
  for (int s = 0; s < plan.num_stages(); ++s) {
    const auto& st = plan.stages[s];
    std::ostringstream range;
    range << "[" << st.first_layer << "," << st.end_layer << ")";
    os << std::left << std::setw(6) << s << std::setw(14) << range.str() << std::setw(10) << st.replicas()
       << std::setw(8) << (st.recompute ? "yes" : "no") << std::fixed << std::setprecision(3) << std::setw(12)
       << st.predicted.forward_ns / 1e6 << std::setw(12) << st.predicted.backward_ns / 1e6 << std::setw(12)
       << st.predicted.comm_ns / 1e6 << std::setw(14) << st.predicted.allreduce_ns / 1e6 << std::setprecision(1)
       << st.predicted.memory_bytes / 1048576.0 << "\n";
  }
  os << "(per micro-batch and replica: fwd, bwd, comm = input + output transfer one way each; allreduce = one "
        "ring all-reduce of the stage's gradients: sync once per iteration, async after each backward)\n";
  os << std::setprecision(9) << "iteration " << plan.predicted.iteration_time_s << " s, bottleneck "
     << plan.predicted.bottleneck_time_s << " s, throughput " << std::setprecision(3)
     << plan.predicted.throughput_samples_per_s << " samples/s, peak memory " << std::setprecision(1)
     << plan.predicted.peak_memory_bytes / 1048576.0 << " MiB, devices " << plan.num_devices_used << "\n";
  os << std::setprecision(2) << "schedule bubble " << 100 * plan.predicted.schedule_bubble << "%, stage imbalance "
     << 100 * plan.predicted.stage_imbalance << "%, idle share " << 100 * plan.predicted.idle_share << "% (bubble_rate "
     << std::setprecision(3) << plan.predicted.bubble_rate
     << ": the idle share of the longest-span stage, all causes mixed)\n";
  return os.str();
}

}  // namespace pw::planner
