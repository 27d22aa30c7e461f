#include "exec/profile/in_context.h"

#include <chrono>
#include <memory>

#include <time.h>

#include "exec/network.h"
#include "exec/numerics.h"
#include "models/error.h"

namespace pw::exec {

using models::LayerKind;

int64_t profiler_now_ns(bool thread_cpu_time) {
  if (thread_cpu_time) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Tensor synthetic_data(const models::Model& model, int idx, int64_t mb, Rng& rng) {
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

Tensor synthetic_targets(const models::LayerSpec& spec, const std::vector<int64_t>& shape, int64_t mb, Rng& rng) {
  Tensor t(with_batch(mb, shape));
  const int64_t classes = spec.kind == LayerKind::softmax_xent ? spec.attr("classes") : 0;
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = classes > 0 ? static_cast<float>(rng.below(static_cast<uint64_t>(classes)))
                              : static_cast<float>(rng.normal());
  return t;
}

OptimizerOptions optimizer_for_profile(const std::string& name) {
  OptimizerOptions o;
  if (name == "adam" || name == "adam-mixed") {
    o.kind = OptimizerKind::adam;
  } else {
    o.kind = OptimizerKind::sgd;
    o.momentum = name == "sgd-momentum" ? 0.9 : 0.0;
  }
  o.lr = 1e-4;  // small: the weights barely move over the passes
  return o;
}

void append_pass_times(PassTimes& into, const PassTimes& more) {
  auto add = [](std::vector<std::vector<int64_t>>& a, const std::vector<std::vector<int64_t>>& b) {
    if (a.empty()) a.resize(b.size());
    PW_CHECK(a.size() == b.size(), "pass times of different models");
    for (size_t i = 0; i < b.size(); ++i) a[i].insert(a[i].end(), b[i].begin(), b[i].end());
  };
  add(into.forward, more.forward);
  add(into.backward_input, more.backward_input);
  add(into.backward_weight, more.backward_weight);
  add(into.step, more.step);
}

PassTimes time_in_context(const models::Model& model, const PassOptions& o) {
  if (o.micro_batch < 1 || o.reps < 1 || o.warmup < 0 || o.passes_per_step < 1)
    throw InputError("profiler: in-context passes need micro_batch >= 1, reps >= 1, warmup >= 0, passes_per_step >= 1");
  Network net(model, o.seed);
  Rng rng(o.seed + 17);
  const int n = net.size();
  const auto& specs = model.layers();
  // Where each layer's forward inputs come from (>= 0 layer, -1 data, -2 targets).
  std::vector<std::vector<int>> src(n);
  for (int i = 0; i < n; ++i) {
    if (specs[i].kind == LayerKind::input) src[i].push_back(-1);
    for (const std::string& p : specs[i].inputs) src[i].push_back(model.index_of(p));
    if (net.layer(i).is_loss()) src[i].push_back(-2);
  }
  std::vector<std::unique_ptr<Optimizer>> opts(n);
  for (int i = 0; i < n; ++i) {
    Layer& l = net.layer(i);
    if (!l.parameters().empty()) opts[i] = std::make_unique<Optimizer>(l.parameters(), l.gradients(), o.optimizer);
  }
  const bool cpu = o.thread_cpu_time;
  PassTimes t;
  for (auto* v : {&t.forward, &t.backward_input, &t.backward_weight, &t.step}) v->assign(n, {});
  for (int rep = 0; rep < o.warmup + o.reps; ++rep) {
    std::vector<Tensor> owned(2 * n);  // data (2i) and targets (2i+1) per layer
    for (int i = 0; i < n; ++i) {
      if (specs[i].kind == LayerKind::input) owned[2 * i] = synthetic_data(model, i, o.micro_batch, rng);
      if (net.layer(i).is_loss())
        owned[2 * i + 1] = synthetic_targets(specs[i], net.layer(i).input_shapes().back(), o.micro_batch, rng);
    }
    if (o.before_pass) o.before_pass();
    const bool keep = rep >= o.warmup;
    std::vector<Tensor> outs(n);
    std::vector<Context> ctx(n);
    std::vector<std::vector<const Tensor*>> in(n);
    for (int i = 0; i < n; ++i) {
      for (int s : src[i]) in[i].push_back(s >= 0 ? &outs[s] : s == -1 ? &owned[2 * i] : &owned[2 * i + 1]);
      const int64_t a = profiler_now_ns(cpu);
      outs[i] = net.layer(i).forward(in[i], ctx[i]);
      if (keep) t.forward[i].push_back(profiler_now_ns(cpu) - a);
    }
    std::vector<Tensor> grad(n);
    for (int i = n - 1; i >= 0; --i) {
      Layer& l = net.layer(i);
      if (l.is_loss()) {
        grad[i] = Tensor(outs[i].shape());
        grad[i].fill(1.0f);
      }
      int64_t tb = 0, tw = 0;
      if (!grad[i].empty() && specs[i].kind != LayerKind::input) {
        int64_t a = profiler_now_ns(cpu);
        std::vector<Tensor> din = l.backward_input(in[i], ctx[i], grad[i]);
        tb = profiler_now_ns(cpu) - a;
        a = profiler_now_ns(cpu);
        l.backward_weight(in[i], ctx[i], grad[i]);
        tw = profiler_now_ns(cpu) - a;
        for (size_t k = 0; k < din.size(); ++k) {
          const int s = src[i][k];
          if (din[k].empty() || s < 0) continue;
          if (grad[s].empty()) {
            grad[s] = std::move(din[k]);
          } else {
            float* d = grad[s].data();
            const float* x = din[k].data();
            for (int64_t e = 0; e < grad[s].numel(); ++e) d[e] += x[e];
          }
        }
      }
      if (keep) {
        t.backward_input[i].push_back(tb);
        t.backward_weight[i].push_back(tw);
      }
      grad[i] = Tensor();
      ctx[i].clear();
    }
    const bool step_now = (rep + 1) % o.passes_per_step == 0 || rep + 1 == o.warmup + o.reps;
    for (int i = 0; i < n && step_now; ++i) {
      const int64_t a = profiler_now_ns(cpu);
      if (opts[i]) {
        // What the runtime's step costs per layer (LayerStageCompute::step): the finite check
        // of the gradients, the update, the finite check of the weights, the zeroing. The two
        // checks are two more reads of every parameter-sized buffer: ~15-20% of a
        // memory-bound step (mlp 4x4096: 89 ms priced without them, 102-107 ms run).
        const bool grads_finite = all_finite(net.layer(i).gradients());
        opts[i]->step();
        const bool finite = all_finite(net.layer(i).parameters()) && grads_finite;
        net.layer(i).zero_grad();
        if (!finite)
          throw InputError("profiler: layer " + specs[i].name + " became NaN or Inf while measuring");
      }
      if (keep) t.step[i].push_back(opts[i] ? profiler_now_ns(cpu) - a : 0);
    }
  }
  return t;
}

}  // namespace pw::exec
