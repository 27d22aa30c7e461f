#include "exec/profile/profiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "exec/device_ops.h"
#include "exec/device_streams.h"
#include "exec/layers/common.h"
#include "exec/layers/network.h"
#include "exec/machine/memory.h"
#include "exec/parallel.h"
#include "exec/profile/co_run.h"
#include "exec/profile/in_context.h"
#include "exec/profile/measure_memory.h"
#include "exec/profile/op_totals.h"
#include "models/error.h"
#include "models/median.h"
#include "models/optimizer_memory.h"

namespace pw::exec {

namespace {

using models::LayerKind;

bool g_cpu_clock = false;

int64_t now_ns() { return profiler_now_ns(g_cpu_clock); }

struct Stat {
  int64_t median = 0;  // the estimate: the median, or the trimmed mean (MeasureOptions::trimmed_mean)
  double spread = 0;
};

Stat stat(std::vector<int64_t> v, bool trimmed = false) {
  std::sort(v.begin(), v.end());
  Stat s;
  const size_t n = v.size();
  if (n == 0) return s;
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.spread = s.median > 0 ? static_cast<double>(v.back() - v.front()) / static_cast<double>(s.median) : 0;
  if (trimmed)
    s.median = std::llround(models::trimmed_mean_of(std::vector<double>(v.begin(), v.end()), kTrimmedMeanShare));
  return s;
}

// Synthetic inputs and targets on `device`.
Tensor make_data(const models::Model& model, int idx, int64_t mb, Rng& rng, Device device) {
  return placed_on(synthetic_data(model, idx, mb, rng), device);
}
Tensor make_targets(const models::LayerSpec& spec, const std::vector<int64_t>& shape, int64_t mb, Rng& rng,
                    Device device) {
  return placed_on(synthetic_targets(spec, shape, mb, rng), device);
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) {
        std::string s = line.substr(p + 1);
        s.erase(0, s.find_first_not_of(" \t"));
        return s;
      }
    }
  return "unknown CPU";
}

int cpu_count() { return std::max(1u, std::thread::hardware_concurrency()); }

namespace {

// The isolated pass: each layer alone (times and bytes), at o.micro_batch.
models::Profile measure_isolated(const models::Model& model, const MeasureOptions& o,
                                 std::vector<LayerMeasurement>* spreads) {
  if (o.micro_batch < 1) throw InputError("--micro-batch: expected >= 1, got " + std::to_string(o.micro_batch));
  if (o.reps < 1) throw InputError("--reps: expected >= 1, got " + std::to_string(o.reps));
  if (o.warmup < 0) throw InputError("--warmup: expected >= 0, got " + std::to_string(o.warmup));
  const models::OptimizerMemory* opt = nullptr;
  try {
    opt = &models::find_optimizer(o.optimizer);
  } catch (const InputError& e) { throw InputError(std::string("--optimizer: ") + e.what()); }
  if (o.thread_cpu_time && o.threads != 1) throw InputError("profiler: thread CPU time needs threads = 1");
  if (o.threads > 0) set_num_threads(o.threads);
  g_cpu_clock = o.thread_cpu_time;
  bind_thread(o.device);
  MemoryResource& alloc = device_memory(o.device);
  Network net(model, o.seed, o.device);
  Rng rng(o.seed);
  const int64_t mb = o.micro_batch;
  const int n = net.size();

  models::Profile prof;
  prof.model = model.name();
  prof.source = "measured";
  prof.device.name = o.device.is_cpu() ? cpu_model_name() : device_name(o.device);
  prof.device.cores = o.device.is_cpu() ? cpu_count() : 0;
  prof.device.threads = o.device.is_cpu() ? max_threads() : 1;
  prof.micro_batch = mb;
  prof.edges = model.edges();
  if (spreads) spreads->assign(n, {});

  std::vector<Tensor> outputs(n);  // real activations of one micro-batch, for the next layers
  for (int i = 0; i < n; ++i) {
    Layer& layer = net.layer(i);
    const auto& spec = model.layers()[i];
    std::vector<Tensor> owned;  // data / targets
    std::vector<const Tensor*> in;
    if (spec.kind == LayerKind::input) {
      owned.push_back(make_data(model, i, mb, rng, o.device));
      in.push_back(&owned.back());
    }
    for (const std::string& p : spec.inputs) in.push_back(&outputs.at(model.index_of(p)));
    if (layer.is_loss()) {
      owned.push_back(make_targets(spec, layer.input_shapes().back(), mb, rng, o.device));
      in.push_back(&owned.back());
    }
    // Inputs this layer holds for backward: data / targets it owns, and each producer's output
    // at its first reader only (the executor keeps one copy per range however many read it).
    int64_t in_bytes = 0;
    for (const Tensor& t : owned) in_bytes += t.bytes();
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const int j = model.index_of(spec.inputs[k]);
      bool counted = std::find(spec.inputs.begin(), spec.inputs.begin() + k, spec.inputs[k]) != spec.inputs.begin() + k;
      for (const auto& e : model.edges())
        if (e.from == j && e.to < i) counted = true;
      if (!counted) in_bytes += outputs.at(j).bytes();
    }

    std::vector<int64_t> tf, tb, tw;
    int64_t out_bytes = 0, stash = 0, workspace = 0, pending = 0;
    for (int rep = 0; rep < o.warmup + o.reps; ++rep) {
      layer.zero_grad();
      const int64_t live0 = alloc.live_bytes();
      alloc.reset_peak();
      Context ctx;
      int64_t t0 = now_ns();
      Tensor y = layer.forward(in, ctx);
      const int64_t f = (now_ns() - t0);
      const int64_t ctx_fwd = ctx.bytes();  // B may add to ctx what W reads; not held from F on
      Tensor dy_host = Tensor(y.shape());
      if (layer.is_loss()) dy_host.fill(1.0f);
      else
        for (int64_t k = 0; k < dy_host.numel(); ++k) dy_host.data()[k] = 1e-3f * static_cast<float>((k % 7) - 3);
      const Tensor dy = placed_on(std::move(dy_host), o.device);
      t0 = now_ns();
      std::vector<Tensor> dx = layer.backward_input(in, ctx, dy);
      const int64_t b = (now_ns() - t0);
      // Kept from B until W by a LayerRange: what B added to the Context, and dy when W needs it.
      pending = std::max<int64_t>(0, ctx.bytes() - ctx_fwd) + (layer.gradients().empty() ? 0 : dy.bytes());
      t0 = now_ns();
      layer.backward_weight(in, ctx, dy);
      const int64_t w = (now_ns() - t0);
      if (rep >= o.warmup) {
        tf.push_back(f);
        tb.push_back(b);
        tw.push_back(w);
      }
      out_bytes = y.bytes();
      stash = in_bytes + ctx_fwd;
      int64_t dx_bytes = 0;
      for (const Tensor& t : dx) dx_bytes += t.empty() ? 0 : t.bytes();
      workspace = std::max<int64_t>(0, alloc.peak_bytes() - live0 - out_bytes - ctx_fwd - dy.bytes() - dx_bytes);
      if (rep + 1 == o.warmup + o.reps) outputs[i] = std::move(y);
    }
    models::LayerProfile lp;
    lp.name = spec.name;
    lp.kind = std::string(models::to_string(spec.kind));
    const Stat sf = stat(tf), sb = stat(tb), sw = stat(tw);
    lp.forward_ns = sf.median;
    lp.backward_input_ns = spec.kind == LayerKind::input || spec.kind == LayerKind::embedding ? 0 : sb.median;
    lp.backward_weight_ns = layer.parameters().empty() && layer.gradients().empty() ? 0 : sw.median;
    lp.output_bytes = out_bytes;
    lp.stash_bytes = spec.kind == LayerKind::input ? 0 : stash;
    lp.parameter_bytes = layer.parameter_bytes();
    lp.optimizer_bytes =
        static_cast<int64_t>(static_cast<double>(lp.parameter_bytes) / 4.0 * (opt->total() - 2 * opt->weight_bytes));
    lp.workspace_bytes = workspace;
    lp.weight_pending_bytes = spec.kind == LayerKind::input ? 0 : pending;
    lp.is_data_loading = spec.kind == LayerKind::input;
    prof.layers.push_back(lp);
    if (spreads) (*spreads)[i] = {sf.spread, sb.spread, sw.spread, lp.is_data_loading ? 0 : pending};
    // Free what later layers no longer read.
    for (const std::string& p : spec.inputs) {
      const int j = model.index_of(p);
      bool later = false;
      for (const auto& e : model.edges())
        if (e.from == j && e.to > i) later = true;
      if (!later) outputs[j] = Tensor();
    }
    if (o.progress) o.progress(i + 1, n, spec.name);
  }
  return prof;
}

}  // namespace

namespace {

struct PointResult {
  std::vector<models::PointTimes> layers;
  std::vector<Stat> f, b, w;
};

// One in-context point: `workers` copies at once on `threads` threads each, `reps` timed
// passes per copy; each copy's samples. On `on`'s threads when it has one per copy (they have
// their OpenMP teams set already), else on threads of their own.
std::vector<PassTimes> run_in_context(const models::Model& model, const MeasureOptions& o, int64_t mb, int threads,
                                      int workers, int reps, const CopyThreads* on = nullptr) {
  PassOptions po;
  po.micro_batch = mb;
  po.reps = reps;
  po.warmup = o.warmup;
  po.optimizer = optimizer_for_profile(o.optimizer);
  po.thread_cpu_time = o.thread_cpu_time;
  po.passes_per_step = o.passes_per_step;
  po.device = o.device;
  std::vector<PassTimes> per(workers);
  const auto copy = [&](int w, CoRunBarrier& barrier) {
    PassOptions q = po;
    q.seed = o.seed + static_cast<uint64_t>(w);
    q.before_pass = [&barrier] { barrier.arrive_and_wait(); };
    if (!o.copy_layers.empty()) q.layers = o.copy_layers.at(static_cast<size_t>(w));
    if (!o.copy_order.empty()) q.order = o.copy_order.at(static_cast<size_t>(w));
    per[w] = time_in_context(model, q);
  };
  if (on && on->workers == workers) co_run_on(*on, copy);
  else co_run(workers, threads, copy);
  return per;
}

// Medians, or F/B/W trimmed means (`trimmed`), and spreads per layer of a point's pooled samples.
// With the ops of a worker's order (`ops`), each op's layers are then priced by the op's totals
// (price_op_totals).
PointResult summarize(const models::Model& model, const PassTimes& all, bool trimmed,
                      const std::vector<PassOp>& ops = {}) {
  PointResult r;
  const auto& specs = model.layers();
  for (size_t i = 0; i < specs.size(); ++i) {
    const Stat f = stat(all.forward[i], trimmed), b = stat(all.backward_input[i], trimmed),
               w = stat(all.backward_weight[i], trimmed), st = stat(all.step[i]);  // few step samples: median
    const bool no_b = specs[i].kind == LayerKind::input || specs[i].kind == LayerKind::embedding;
    r.layers.push_back({f.median, no_b ? 0 : b.median, w.median, st.median});
    r.f.push_back(f);
    r.b.push_back(b);
    r.w.push_back(w);
  }
  if (!ops.empty()) price_op_totals(r.layers, all, ops, kTrimmedMeanShare);
  return r;
}

int workers_for(const MeasureOptions& o, int threads) {
  if (!o.device.is_cpu()) return 1;  // a device runs one copy
  if (o.co_run_workers > 0) return o.co_run_workers;
  return threads > 0 ? std::max(1, cpu_count() / threads) : 1;
}

}  // namespace

namespace {

void check_measure_options(const MeasureOptions& o) {
  if (!o.device.is_cpu()) {
    if (!o.in_context) throw InputError("--isolated: the device profiler times layers in context only");
    if (o.thread_cpu_time) throw InputError("--cpu-clock: a device's work is timed with its own events");
    if (o.co_run_workers > 1) throw InputError("--co-run: a device is measured as one copy");
    if (o.thread_counts.size() > 1) throw InputError("--threads: a device's profile has one point per micro-batch");
  }
  if (o.co_run_workers < 0) throw InputError("--co-run: expected >= 0, got " + std::to_string(o.co_run_workers));
  if (o.rounds < 1) throw InputError("profiler: expected rounds >= 1, got " + std::to_string(o.rounds));
  for (const size_t k : {o.copy_layers.size(), o.copy_order.size()})
    if (k > 0 && (!o.in_context || static_cast<int>(k) != workers_for(o, o.threads) || o.micro_batches.size() > 1 ||
                  o.thread_counts.size() > 1))
      throw InputError(
          "profiler: per-copy layers or orders need the in-context mode, one point and one entry per "
          "co-run copy (" +
          std::to_string(workers_for(o, o.threads)) + "), got " + std::to_string(k));
  for (int64_t b : o.micro_batches)
    if (b < 1) throw InputError("--micro-batch: expected sizes >= 1, got " + std::to_string(b));
  for (int k : o.thread_counts)
    if (k < 1) throw InputError("--threads: expected counts >= 1, got " + std::to_string(k));
  if (o.thread_cpu_time)
    for (int k : o.thread_counts)
      if (k != 1) throw InputError("profiler: thread CPU time needs threads = 1");
}

std::vector<int64_t> micro_batches_of(const MeasureOptions& o) {
  return o.micro_batches.empty() ? std::vector<int64_t>{o.micro_batch} : o.micro_batches;
}
std::vector<int> thread_counts_of(const MeasureOptions& o) {
  return o.thread_counts.empty() ? std::vector<int>{o.threads} : o.thread_counts;
}
bool is_base_point(const MeasureOptions& o, int64_t mb, int k) {
  return mb == o.micro_batch && (k == o.threads || (k <= 0 && o.threads <= 0));
}

// The base point's times into `into`'s layers.
void fill_base(models::Profile& into, const std::vector<models::PointTimes>& times) {
  for (size_t i = 0; i < times.size(); ++i) {
    auto& l = into.layers[i];
    l.forward_ns = times[i].forward_ns;
    if (l.backward_input_ns > 0 || !l.is_data_loading) l.backward_input_ns = times[i].backward_input_ns;
    if (l.backward_weight_ns > 0) l.backward_weight_ns = times[i].backward_weight_ns;
    l.step_ns = times[i].step_ns;
  }
}

// A point other than the base into prof.points.
void add_point(models::Profile& prof, int64_t mb, int threads, int workers, std::vector<models::PointTimes> times) {
  models::ProfilePoint pt;
  pt.micro_batch = mb;
  pt.threads = threads;
  pt.co_run_workers = workers;
  pt.layers = std::move(times);
  for (size_t i = 0; i < pt.layers.size(); ++i) {
    if (prof.layers[i].is_data_loading) pt.layers[i].backward_input_ns = 0;
    if (prof.layers[i].backward_weight_ns == 0 && prof.layers[i].parameter_bytes == 0)
      pt.layers[i].backward_weight_ns = 0;
  }
  prof.points.push_back(std::move(pt));
}

// The bytes pass (one isolated pass at the base micro-batch; its times are replaced by the
// in-context ones). It runs on a thread of its own, which takes its OpenMP threads with it when
// it ends. Run on the calling thread with more than one OpenMP thread, it left that thread's
// idle team behind for the co-run, and libgomp counts idle team threads: with more of them than
// CPUs it cuts its spin-wait to about a thousand iterations, so the co-run's multi-threaded
// copies slept and woke at every parallel region. The 2-thread in-context profile of the
// default gpt then read 17-20% slower than the run it predicts (36 ms per micro-batch against
// 30.5 ms; bench/RESULTS.md).
models::Profile bytes_pass(const models::Model& model, const MeasureOptions& o,
                           std::vector<LayerMeasurement>* spreads) {
  MeasureOptions base = o;
  base.reps = 1;
  base.warmup = std::min(o.warmup, 1);
  base.progress = nullptr;
  const int threads = o.threads > 0 ? o.threads : max_threads();
  models::Profile prof;
  co_run(1, threads, [&](int, CoRunBarrier&) { prof = measure_isolated(model, base, spreads); });
  return prof;
}

// The micro-batch sizes of `mbs` whose every point (with each thread count of `ths`) fits in
// `available` bytes, by `bytes` measured at micro-batch `bytes_mb` (MeasureOptions::
// drop_sizes_over_memory): throws InputError for one that does not, unless it may be dropped.
std::vector<int64_t> sizes_that_fit(const models::Profile& bytes, int64_t bytes_mb, const MeasureOptions& o,
                                    const std::vector<int64_t>& mbs, const std::vector<int>& ths, int64_t available) {
  std::vector<int64_t> kept;
  for (int64_t mb : mbs) {
    std::string reason;
    for (int k : ths) {
      const int copies = workers_for(o, k);
      int64_t need = 0;
      for (int c = 0; c < copies; ++c)
        need += in_context_copy_bytes(bytes, bytes_mb, mb,
                                      o.copy_layers.empty() ? std::vector<bool>{} : o.copy_layers.at(c),
                                      o.copy_order.empty() ? std::vector<PassOp>{} : o.copy_order.at(c));
      if (reason.empty()) reason = measure_memory_shortfall(mb, copies, need, available);
    }
    if (reason.empty()) {
      kept.push_back(mb);
    } else if (o.drop_sizes_over_memory && mb != o.micro_batch) {
      if (o.note) o.note("micro-batch " + std::to_string(mb) + " not measured: " + reason);
    } else {
      throw InputError("profiler: " + reason + "; measure smaller micro-batches or a smaller model");
    }
  }
  return kept;
}

}  // namespace

struct ProfileInRounds::State {
  const models::Model& model;
  MeasureOptions o;
  std::vector<int64_t> mbs;
  std::vector<int> ths;
  models::Profile bytes;                  // the bytes pass (layers, device, edges)
  std::vector<LayerMeasurement> spreads;  // the bytes pass's (weight_pending_bytes)
  std::vector<PassTimes> pooled;          // per point (ths x mbs), every copy's samples
  std::vector<PassTimes> base_per_copy;   // the base point's samples, per copy
  int rounds = 0, passes = 0, done = 0;
};

ProfileInRounds::ProfileInRounds(const models::Model& model, const MeasureOptions& o)
    : s_(std::make_unique<State>(State{model, o, micro_batches_of(o), thread_counts_of(o), {}, {}, {}, {}, 0, 0, 0})) {
  check_measure_options(o);
  if (!o.in_context) throw InputError("profiler: measuring in rounds needs the in-context mode");
  // Memory first (MeasureOptions::drop_sizes_over_memory). The bytes pass holds a whole pass at
  // the base size, so a larger base is checked from a bytes pass at micro-batch 1 before it.
  // A device's memory is its own: the host's is not checked for it.
  const int64_t available = !o.device.is_cpu()              ? 0
                            : o.available_memory_bytes >= 0 ? o.available_memory_bytes
                                                            : available_memory_bytes();
  if (available != 0 && o.micro_batch > 1) {
    MeasureOptions probe = o;
    probe.micro_batch = 1;
    s_->mbs = sizes_that_fit(bytes_pass(model, probe, nullptr), 1, o, s_->mbs, s_->ths, available);
  }
  s_->bytes = bytes_pass(model, o, &s_->spreads);
  if (available != 0 && o.micro_batch == 1) s_->mbs = sizes_that_fit(s_->bytes, 1, o, s_->mbs, s_->ths, available);
  s_->pooled.resize(s_->ths.size() * s_->mbs.size());
}

ProfileInRounds::~ProfileInRounds() = default;

void ProfileInRounds::round(int reps, const CopyThreads* on) {
  if (reps < 1) throw InputError("profiler: expected >= 1 timed passes per round, got " + std::to_string(reps));
  measure(reps, on, true);
  ++s_->rounds;
}

void ProfileInRounds::top_up(int reps, const CopyThreads* on) {
  if (reps < 1) throw InputError("profiler: expected >= 1 timed passes to top a round up, got " + std::to_string(reps));
  if (s_->rounds < 1) throw InputError("profiler: a round to top up needs a round first");
  measure(reps, on, false);
}

void ProfileInRounds::measure(int reps, const CopyThreads* on, bool progress) {
  State& s = *s_;
  const int total = static_cast<int>(s.mbs.size() * s.ths.size()) * std::max(s.o.rounds, s.rounds + 1);
  for (size_t ki = 0; ki < s.ths.size(); ++ki)
    for (size_t mi = 0; mi < s.mbs.size(); ++mi) {
      const int k = s.ths[ki];
      const int64_t mb = s.mbs[mi];
      const std::vector<PassTimes> copies = run_in_context(s.model, s.o, mb, k, workers_for(s.o, k), reps, on);
      for (const PassTimes& t : copies) append_pass_times(s.pooled[ki * s.mbs.size() + mi], t);
      if (is_base_point(s.o, mb, k)) {
        s.base_per_copy.resize(copies.size());
        for (size_t w = 0; w < copies.size(); ++w) append_pass_times(s.base_per_copy[w], copies[w]);
      }
      if (progress && s.o.progress)
        s.o.progress(++s.done, total,
                     "micro-batch " + std::to_string(mb) + ", " + std::to_string(k) + " threads" +
                         (s.o.rounds > 1 || s.rounds > 0 ? ", round " + std::to_string(s.rounds + 1) : ""));
    }
  // Copies in an order time whole steps (every copy's order has the plan's micro-batches).
  s.passes += s.o.copy_order.empty() ? reps : timed_passes_for(reps, s.o.copy_order.front());
}

int ProfileInRounds::rounds_done() const { return s_->rounds; }
int ProfileInRounds::timed_passes() const { return s_->passes; }

models::Profile ProfileInRounds::profile(std::vector<LayerMeasurement>* spreads,
                                         std::vector<models::Profile>* per_copy) const {
  const State& s = *s_;
  PW_CHECK(s.rounds > 0, "ProfileInRounds::profile before any round");
  models::Profile prof = s.bytes;
  if (spreads) *spreads = s.spreads;
  if (per_copy) per_copy->clear();
  prof.measurement = models::ProfileMeasurement{"in-context", workers_for(s.o, s.o.threads), s.passes};
  // The copies' ops together (their layers are disjoint; pooled, each layer's samples are its
  // copy's), for pricing the pooled profile's ops as wholes too.
  std::vector<PassOp> all_ops;
  for (const auto& order : s.o.copy_order) all_ops.insert(all_ops.end(), order.begin(), order.end());
  for (size_t ki = 0; ki < s.ths.size(); ++ki)
    for (size_t mi = 0; mi < s.mbs.size(); ++mi) {
      const int k = s.ths[ki];
      const int64_t mb = s.mbs[mi];
      const PointResult r = summarize(s.model, s.pooled[ki * s.mbs.size() + mi], s.o.trimmed_mean, all_ops);
      if (is_base_point(s.o, mb, k)) {
        if (spreads)
          for (size_t i = 0; i < r.f.size(); ++i) {
            (*spreads)[i].forward_spread = r.f[i].spread;
            (*spreads)[i].backward_input_spread = r.b[i].spread;
            (*spreads)[i].backward_weight_spread = r.w[i].spread;
          }
        fill_base(prof, r.layers);
      } else {
        add_point(prof, mb, k > 0 ? k : prof.device.threads, workers_for(s.o, k), r.layers);
      }
    }
  if (per_copy)  // after every point is in `prof`: each copy's profile differs in the base times only
    for (size_t c = 0; c < s.base_per_copy.size(); ++c) {
      per_copy->push_back(prof);
      const std::vector<PassOp> none;
      fill_base(per_copy->back(), summarize(s.model, s.base_per_copy[c], s.o.trimmed_mean,
                                            s.o.copy_order.empty() ? none : s.o.copy_order.at(c))
                                      .layers);
      models::validate_profile(per_copy->back(), "measured profile of one co-run copy");
    }
  models::validate_profile(prof, "measured profile");
  return prof;
}

models::Profile measure_profile(const models::Model& model, const MeasureOptions& o,
                                std::vector<LayerMeasurement>* spreads, std::vector<models::Profile>* per_copy) {
  check_measure_options(o);
  if (o.reps < 1) throw InputError("--reps: expected >= 1, got " + std::to_string(o.reps));
  if (per_copy) per_copy->clear();
  if (o.in_context) {
    // Rounds: every point once per round, its timed passes split over the rounds, the
    // samples pooled. A point's passes then span the whole measurement instead of one stretch
    // of it, so a machine whose speed drifts over seconds (this VM: the same 2-thread point
    // read 2.4 or 3.4 ms from one profile to the next) weighs on every point alike.
    ProfileInRounds rounds(model, o);
    const int per_round = (o.reps + o.rounds - 1) / o.rounds;
    for (int r = 0; r < o.rounds; ++r) rounds.round(per_round);
    models::Profile prof = rounds.profile(spreads, per_copy);
    prof.measurement->reps = o.reps;
    return prof;
  }
  models::Profile prof = measure_isolated(model, o, spreads);
  prof.measurement = models::ProfileMeasurement{"isolated", 1, o.reps};
  for (int k : thread_counts_of(o))
    for (int64_t mb : micro_batches_of(o)) {
      if (is_base_point(o, mb, k)) continue;
      MeasureOptions q = o;
      q.micro_batch = mb;
      q.threads = k;
      q.progress = nullptr;
      const models::Profile p = measure_isolated(model, q, nullptr);
      std::vector<models::PointTimes> times;
      for (const auto& l : p.layers) times.push_back({l.forward_ns, l.backward_input_ns, l.backward_weight_ns, 0});
      add_point(prof, mb, k > 0 ? k : prof.device.threads, 1, std::move(times));
    }
  if (o.threads > 0) set_num_threads(o.threads);
  models::validate_profile(prof, "measured profile");
  return prof;
}

}  // namespace pw::exec
