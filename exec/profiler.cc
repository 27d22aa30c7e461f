#include "exec/profiler.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <time.h>

#include "exec/layers/common.h"
#include "exec/network.h"
#include "exec/parallel.h"
#include "models/error.h"
#include "models/optimizer_memory.h"

namespace pw::exec {

namespace {

using Clock = std::chrono::steady_clock;
using models::LayerKind;

bool g_cpu_clock = false;

// Nanoseconds on the wall clock, or on the calling thread's CPU clock (g_cpu_clock).
int64_t now_ns() {
  if (g_cpu_clock) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct Stat {
  int64_t median = 0;
  double spread = 0;
};

Stat stat(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  Stat s;
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.spread = s.median > 0 ? static_cast<double>(v.back() - v.front()) / static_cast<double>(s.median) : 0;
  return s;
}

// Synthetic data for the model's input layer: token ids when an embedding reads it.
Tensor make_data(const models::Model& model, int idx, int64_t mb, Rng& rng) {
  const auto& spec = model.layers()[idx];
  Tensor t(with_batch(mb, spec.output_shape));
  int64_t vocab = 0;
  for (const auto& l : model.layers())
    if (l.kind == LayerKind::embedding && !l.inputs.empty() && l.inputs[0] == spec.name) vocab = l.attr("vocab");
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = vocab > 0 ? static_cast<float>(rng.below(static_cast<uint64_t>(vocab)))
                            : static_cast<float>(rng.normal());
  return t;
}

Tensor make_targets(const models::LayerSpec& spec, const std::vector<int64_t>& shape, int64_t mb, Rng& rng) {
  Tensor t(with_batch(mb, shape));
  const int64_t classes = spec.kind == LayerKind::softmax_xent ? spec.attr("classes") : 0;
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = classes > 0 ? static_cast<float>(rng.below(static_cast<uint64_t>(classes)))
                              : static_cast<float>(rng.normal());
  return t;
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

models::Profile measure_profile(const models::Model& model, const MeasureOptions& o,
                                std::vector<LayerMeasurement>* spreads) {
  if (o.micro_batch < 1) throw InputError("--micro-batch: expected >= 1, got " + std::to_string(o.micro_batch));
  if (o.reps < 1) throw InputError("--reps: expected >= 1, got " + std::to_string(o.reps));
  if (o.warmup < 0) throw InputError("--warmup: expected >= 0, got " + std::to_string(o.warmup));
  const models::OptimizerMemory* opt = nullptr;
  try {
    opt = &models::find_optimizer(o.optimizer);
  } catch (const InputError& e) {
    throw InputError(std::string("--optimizer: ") + e.what());
  }
  if (o.thread_cpu_time && o.threads != 1)
    throw InputError("profiler: thread CPU time needs threads = 1");
  if (o.threads > 0) set_num_threads(o.threads);
  g_cpu_clock = o.thread_cpu_time;
  Allocator& alloc = Allocator::global();
  Network net(model, o.seed);
  Rng rng(o.seed);
  const int64_t mb = o.micro_batch;
  const int n = net.size();

  models::Profile prof;
  prof.model = model.name();
  prof.source = "measured";
  prof.device.name = cpu_model_name();
  prof.device.cores = cpu_count();
  prof.device.threads = max_threads();
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
      owned.push_back(make_data(model, i, mb, rng));
      in.push_back(&owned.back());
    }
    for (const std::string& p : spec.inputs) in.push_back(&outputs.at(model.index_of(p)));
    if (layer.is_loss()) {
      owned.push_back(make_targets(spec, layer.input_shapes().back(), mb, rng));
      in.push_back(&owned.back());
    }
    // Inputs this layer holds for backward: data / targets it owns, and each producer's output
    // at its first reader only (the executor keeps one copy per range however many read it).
    int64_t in_bytes = 0;
    for (const Tensor& t : owned) in_bytes += t.bytes();
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const int j = model.index_of(spec.inputs[k]);
      bool counted = std::find(spec.inputs.begin(), spec.inputs.begin() + k, spec.inputs[k]) !=
                     spec.inputs.begin() + k;
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
      Tensor dy = Tensor(y.shape());
      if (layer.is_loss()) dy.fill(1.0f);
      else for (int64_t k = 0; k < dy.numel(); ++k) dy.data()[k] = 1e-3f * static_cast<float>((k % 7) - 3);
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
    lp.optimizer_bytes = static_cast<int64_t>(static_cast<double>(lp.parameter_bytes) / 4.0 *
                                              (opt->total() - 2 * opt->weight_bytes));
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
  models::validate_profile(prof, "measured profile");
  return prof;
}

}  // namespace pw::exec
