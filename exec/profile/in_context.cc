#include "exec/profile/in_context.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <time.h>

#include "exec/device_ops.h"
#include "exec/device_streams.h"
#include "exec/layers/network.h"
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
    t.data()[i] =
        vocab > 0 ? static_cast<float>(rng.below(static_cast<uint64_t>(vocab))) : static_cast<float>(rng.normal());
  return t;
}

Tensor synthetic_output(const models::Model& model, int idx, int64_t mb, Rng& rng, bool values) {
  if (!values && model.layers()[idx].kind == LayerKind::input) return synthetic_data(model, idx, mb, rng);
  Tensor t(with_batch(mb, model.layers()[idx].output_shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(rng.normal());
  return t;
}

Tensor synthetic_targets(const models::LayerSpec& spec, const std::vector<int64_t>& shape, int64_t mb, Rng& rng) {
  Tensor t(with_batch(mb, shape));
  const int64_t classes = spec.kind == LayerKind::softmax_xent ? spec.attr("classes") : 0;
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] =
        classes > 0 ? static_cast<float>(rng.below(static_cast<uint64_t>(classes))) : static_cast<float>(rng.normal());
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

int order_micro_batches(const std::vector<PassOp>& order) {
  int mbs = 0;
  for (const PassOp& op : order) mbs = std::max(mbs, op.micro_batch + 1);
  return mbs;
}

int timed_passes_for(int reps, const std::vector<PassOp>& order) {
  const int mbs = order_micro_batches(order);
  return mbs == 0 ? reps : (reps + mbs - 1) / mbs * mbs;
}

namespace {

// The checks of PassOptions::layers and ::order; the order's micro-batch count (0 without one).
int check_pass_layout(const PassOptions& o, int n) {
  if (!o.layers.empty() && static_cast<int>(o.layers.size()) != n)
    throw InputError("profiler: the layer mask has " + std::to_string(o.layers.size()) + " entries for " +
                     std::to_string(n) + " layers");
  for (const PassOp& op : o.order)
    if (op.micro_batch < 0 || op.begin < 0 || op.end > n || op.begin >= op.end)
      throw InputError("profiler: an op of the pass order has micro-batch " + std::to_string(op.micro_batch) +
                       " and layers [" + std::to_string(op.begin) + ", " + std::to_string(op.end) + ") of " +
                       std::to_string(n));
  const int mbs = order_micro_batches(o.order);
  // Per micro-batch and layer: 0 nothing yet, 1 after F, 2 after B, 3 done (BW, or W after B).
  using K = PassOp::Kind;
  std::vector<std::vector<int>> state(mbs, std::vector<int>(n, 0));
  for (const PassOp& op : o.order)
    for (int i = op.begin; i < op.end; ++i) {
      int& st = state[op.micro_batch][i];
      const int from = op.kind == K::F ? 0 : op.kind == K::W ? 2 : 1;
      if (st != from)
        throw InputError("profiler: the pass order runs " +
                         std::string(op.kind == K::F   ? "F"
                                     : op.kind == K::B ? "B"
                                     : op.kind == K::W ? "W"
                                                       : "BW") +
                         " of layer " + std::to_string(i) + " of micro-batch " + std::to_string(op.micro_batch) +
                         " out of turn (F, then BW or B and W, once each)");
      st = op.kind == K::F ? 1 : op.kind == K::B ? 2 : 3;
    }
  for (int mb = 0; mb < mbs; ++mb)
    for (int i = 0; i < n; ++i)
      if (state[mb][i] == 1 || state[mb][i] == 2)
        throw InputError("profiler: the pass order leaves layer " + std::to_string(i) + " of micro-batch " +
                         std::to_string(mb) + " without its " + (state[mb][i] == 1 ? "backward" : "W"));
  return mbs;
}

// The clock of a pass's ops: the host's (steady or thread CPU time) read at each call, or marks
// in a device's stream whose times are read in flush() (after a pass or a step). A time span
// is recorded as (a, b) from two now() calls and lands in its list at the next flush.
class PassClock {
 public:
  PassClock(Device device, bool cpu) : cpu_(cpu) {
    if (!device.is_cpu()) {
      clock_ = make_stream_clock(device, std::chrono::steady_clock::now());
      clock_->start();
    }
  }
  int64_t now() { return clock_ ? clock_->mark() : profiler_now_ns(cpu_); }
  // b - a into `into` (now, or at the next flush on a device); a < 0: 0.
  void record(std::vector<int64_t>& into, int64_t a, int64_t b) {
    if (!clock_) into.push_back(a < 0 ? 0 : b - a);
    else pending_.push_back({&into, a, b});
  }
  void flush() {
    if (!clock_) return;
    const std::vector<int64_t> t = clock_->finish();
    for (const Span& s : pending_)
      s.into->push_back(s.a < 0 ? 0 : t.at(static_cast<size_t>(s.b)) - t.at(static_cast<size_t>(s.a)));
    pending_.clear();
    clock_->start();
  }

 private:
  struct Span {
    std::vector<int64_t>* into;
    int64_t a, b;
  };
  bool cpu_;
  std::unique_ptr<StreamClock> clock_;
  std::vector<Span> pending_;
};

// Whether every tensor is finite (on a device, one read-back for the list).
bool tensors_finite(const std::vector<Tensor*>& ts) {
  if (ts.empty() || ts.front()->device().is_cpu()) return all_finite(ts);
  for (bool ok : finite_flags(ts))
    if (!ok) return false;
  return true;
}

}  // namespace

PassTimes time_in_context(const models::Model& model, const PassOptions& o) {
  if (o.micro_batch < 1 || o.reps < 1 || o.warmup < 0 || o.passes_per_step < 1)
    throw InputError("profiler: in-context passes need micro_batch >= 1, reps >= 1, warmup >= 0, passes_per_step >= 1");
  const int n = static_cast<int>(model.layers().size());
  const int order_mbs = check_pass_layout(o, n);
  if (!o.device.is_cpu() && o.thread_cpu_time)
    throw InputError("profiler: the thread's CPU clock does not time a device's work");
  bind_thread(o.device);
  Network net(model, o.seed, o.device);
  Rng rng(o.seed + 17);
  const Device dev = o.device;
  const auto& specs = model.layers();
  const auto runs = [&](int i) { return o.layers.empty() || o.layers[static_cast<size_t>(i)]; };
  // Where each layer's forward inputs come from (>= 0 layer, -1 data, -2 targets).
  std::vector<std::vector<int>> src(n);
  for (int i = 0; i < n; ++i) {
    if (specs[i].kind == LayerKind::input) src[i].push_back(-1);
    for (const std::string& p : specs[i].inputs) src[i].push_back(model.index_of(p));
    if (net.layer(i).is_loss()) src[i].push_back(-2);
  }
  // Masked layers whose output an unmasked layer reads: their output gradient is a stand-in.
  std::vector<bool> grad_from_outside(n, false);
  for (int i = 0; i < n; ++i)
    if (!runs(i))
      for (int s : src[i])
        if (s >= 0 && runs(s)) grad_from_outside[s] = true;
  std::vector<std::unique_ptr<Optimizer>> opts(n);
  for (int i = 0; i < n; ++i) {
    Layer& l = net.layer(i);
    if (runs(i) && !l.parameters().empty())
      opts[i] = std::make_unique<Optimizer>(l.parameters(), l.gradients(), o.optimizer, device_memory(dev));
  }
  PassClock clock(dev, o.thread_cpu_time);
  PassTimes t;
  for (auto* v : {&t.forward, &t.backward_input, &t.backward_weight, &t.step}) v->assign(n, {});

  // One micro-batch from its first forward to its last backward.
  struct Pass {
    std::vector<Tensor> owned;  // data (2i) and targets (2i+1) per layer
    std::vector<Tensor> outs;   // outputs; an unmasked layer's is a stand-in where read
    std::vector<Tensor> grad;   // output gradients; stand-ins where an unmasked layer reads
    std::vector<Tensor> for_w;  // after a B op: each layer's output gradient, for its W
    std::vector<Context> ctx;
    std::vector<std::vector<const Tensor*>> in;
    bool keep = false;
  };
  // Fresh data, targets and stand-ins (untimed).
  const auto new_pass = [&](bool keep) {
    auto p = std::make_unique<Pass>();
    p->keep = keep;
    p->owned.resize(2 * n);
    p->outs.resize(n);
    p->grad.resize(n);
    p->for_w.resize(n);
    p->ctx.resize(n);
    p->in.resize(n);
    for (int i = 0; i < n; ++i) {
      if (!runs(i)) continue;
      if (specs[i].kind == LayerKind::input)
        p->owned[2 * i] = placed_on(synthetic_data(model, i, o.micro_batch, rng), dev);
      if (net.layer(i).is_loss())
        p->owned[2 * i + 1] =
            placed_on(synthetic_targets(specs[i], net.layer(i).input_shapes().back(), o.micro_batch, rng), dev);
      for (int s : src[i])
        if (s >= 0 && !runs(s) && p->outs[s].empty())
          p->outs[s] = placed_on(synthetic_output(model, s, o.micro_batch, rng), dev);
      if (grad_from_outside[i])
        p->grad[i] = placed_on(synthetic_output(model, i, o.micro_batch, rng, /*values=*/true), dev);
    }
    return p;
  };
  const auto forward = [&](Pass& p, int begin, int end) {
    for (int i = begin; i < end; ++i) {
      if (!runs(i)) continue;
      for (int s : src[i]) p.in[i].push_back(s >= 0 ? &p.outs[s] : s == -1 ? &p.owned[2 * i] : &p.owned[2 * i + 1]);
      const int64_t a = clock.now();
      p.outs[i] = net.layer(i).forward(p.in[i], p.ctx[i]);
      const int64_t b = clock.now();
      if (p.keep) clock.record(t.forward[i], a, b);
    }
  };
  // B (input), W (weight) or both of the masked layers in [begin, end), last layer first.
  const auto backward = [&](Pass& p, int begin, int end, bool input, bool weight) {
    std::vector<Tensor>& grad = p.grad;
    for (int i = end - 1; i >= begin; --i) {
      if (!runs(i)) continue;
      Layer& l = net.layer(i);
      if (!input) {  // W of a layer whose B ran before
        const int64_t a = clock.now();
        if (!p.for_w[i].empty()) l.backward_weight(p.in[i], p.ctx[i], p.for_w[i]);
        p.for_w[i] = Tensor();
        p.ctx[i].clear();
        const int64_t b = clock.now();
        if (p.keep) clock.record(t.backward_weight[i], a, b);
        continue;
      }
      if (l.is_loss()) {
        grad[i] = Tensor(p.outs[i].shape(), device_memory(dev));
        grad[i].fill(1.0f);
      }
      // The times hold what a stage's op spends on the layer besides its kernels, as the run's
      // op does: B the summing of its input gradients into earlier layers', W the release of
      // the layer's context and output gradient.
      int64_t b0 = -1, b1 = -1, w0 = -1, w1 = -1;  // marks; -1: 0 ns
      std::vector<Tensor> to_outside;              // input gradients the run would send: not freed here
      if (!grad[i].empty() && specs[i].kind != LayerKind::input) {
        b0 = clock.now();
        std::vector<Tensor> din = l.backward_input(p.in[i], p.ctx[i], grad[i]);
        for (size_t k = 0; k < din.size(); ++k) {
          const int s = src[i][k];
          if (din[k].empty() || s < 0) continue;
          if (!runs(s)) {
            to_outside.push_back(std::move(din[k]));
          } else if (grad[s].empty()) {
            grad[s] = std::move(din[k]);
          } else if (!grad[s].device().is_cpu()) {
            accumulate(grad[s], din[k]);
          } else {
            float* d = grad[s].data();
            const float* x = din[k].data();
            for (int64_t e = 0; e < grad[s].numel(); ++e) d[e] += x[e];
          }
        }
        b1 = clock.now();
        if (weight) {
          w0 = clock.now();
          l.backward_weight(p.in[i], p.ctx[i], grad[i]);
          grad[i] = Tensor();
          p.ctx[i].clear();
          w1 = clock.now();
        }
      }
      if (p.keep) {
        clock.record(t.backward_input[i], b0, b1);
        if (weight) clock.record(t.backward_weight[i], w0, w1);
      }
      if (weight) {  // released above when timed; here too for a layer no gradient reached
        grad[i] = Tensor();
        p.ctx[i].clear();
      } else if (l.has_weight_grad() && specs[i].kind != LayerKind::input) {
        p.for_w[i] = std::move(grad[i]);  // W reads it (and the context B left), as LayerRange keeps it
      } else {
        grad[i] = Tensor();
      }
    }
  };
  const auto step = [&](bool keep) {
    for (int i = 0; i < n; ++i) {
      if (!runs(i)) continue;
      const int64_t a = clock.now();
      if (opts[i]) {
        // What the runtime's step costs per layer (LayerStageCompute::step): the finite check
        // of the gradients, the update, the finite check of the weights, the zeroing. The two
        // checks are two more reads of every parameter-sized buffer: ~15-20% of a
        // memory-bound step (mlp 4x4096: 89 ms priced without them, 102-107 ms run).
        const bool grads_finite = tensors_finite(net.layer(i).gradients());
        opts[i]->step();
        const bool finite = tensors_finite(net.layer(i).parameters()) && grads_finite;
        net.layer(i).zero_grad();
        if (!finite) throw InputError("profiler: layer " + specs[i].name + " became NaN or Inf while measuring");
      }
      const int64_t b = clock.now();
      if (keep) clock.record(t.step[i], opts[i] ? a : -1, b);
    }
    clock.flush();
  };

  const int total = o.warmup + o.reps;
  if (o.order.empty()) {
    for (int rep = 0; rep < total; ++rep) {
      std::unique_ptr<Pass> p = new_pass(rep >= o.warmup);
      if (o.before_pass) o.before_pass();
      forward(*p, 0, n);
      backward(*p, 0, n, true, true);
      clock.flush();
      if ((rep + 1) % o.passes_per_step == 0 || rep + 1 == total) step(p->keep);
    }
    return t;
  }
  // In the order's steps; a micro-batch's pass is made at its first op (untimed) and dropped
  // after its last.
  std::vector<int> ops_of(order_mbs, 0);
  for (const PassOp& op : o.order) ++ops_of[op.micro_batch];
  const int warm_steps = (o.warmup + order_mbs - 1) / order_mbs;
  const int timed_steps = (o.reps + order_mbs - 1) / order_mbs;
  for (int k = 0; k < warm_steps + timed_steps; ++k) {
    const bool keep = k >= warm_steps;
    std::vector<std::unique_ptr<Pass>> live(order_mbs);
    std::vector<int> left = ops_of;
    if (o.before_pass) o.before_pass();
    for (const PassOp& op : o.order) {
      std::unique_ptr<Pass>& p = live[op.micro_batch];
      if (!p) p = new_pass(keep);
      using K = PassOp::Kind;
      if (op.kind == K::F) forward(*p, op.begin, op.end);
      else backward(*p, op.begin, op.end, op.kind != K::W, op.kind != K::B);
      if (--left[op.micro_batch] == 0) p.reset();
    }
    step(keep);
  }
  return t;
}

}  // namespace pw::exec
