#include "exec/runtime/run_compute.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "exec/device_ops.h"
#include "exec/device_streams.h"
#include "exec/layers/common.h"
#include "exec/numerics.h"
#include "models/error.h"

namespace pw::exec {

struct LayerStageCompute::Stage {
  std::unique_ptr<LayerRange> range;
  Device device;  // where its layers live (Network::layer_device of its first layer)
  bool recompute = false;
  std::unique_ptr<StageOptimizer> opt;
  std::vector<Tensor*> params, grads;
  // Per layer of the range (and one past the last): how many of `grads` earlier layers list.
  std::vector<size_t> grads_before;
  // Forward mapping. Per range input: -1 data, -2 targets, >= 0 index in the incoming payload.
  std::vector<int> in_src;
  std::vector<bool> in_clone;  // the payload tensor is also passed on: the range gets a copy
  // Per name of the outgoing cut: >= 0 index in range outputs, < 0: -(k+1) incoming payload k.
  std::vector<int> out_src;
  int loss_output = -1;
  // Backward mapping. Per range output: index in the incoming gradient payload, or -1.
  std::vector<int> grad_src;
  // Per name of the incoming cut: range input index (or -1), outgoing-cut index (or -1).
  std::vector<int> bgrad_input, bgrad_pass;
  std::set<int> in_flight;
  std::map<int, std::vector<Tensor>> stashed;      // weight copy per micro-batch
  std::map<int64_t, std::vector<Tensor>> history;  // vertical sync: version -> weights
  int64_t version = 0;
  int64_t last_requested = 0;
  bool keep_history = false;
  int64_t peak_act = 0;
  std::vector<Tensor> shadow;                    // 2BW: W(t-1)
  int backwards_done = 0;                        // 2BW: of the current mini-batch
  bool tied_owner = false;                       // holds a copy of the tied table
  bool tied_head = false;                        // ... the head's copy
  std::map<std::pair<int, int>, double> losses;  // (iteration, micro-batch) -> mean loss
};

// The tied table across stages: the embedding's copy (a), the head's copy (b), their gradients,
// the summed gradient and its optimizer.
struct LayerStageCompute::Tied {
  Tensor* a = nullptr;
  Tensor* grad_a = nullptr;
  Tensor b, grad_b;  // on the head's device
  Tensor sum;        // on the embedding's device, with the optimizer state
  // On a CUDA device: each owner's gradient, staged through the host (the two copies live on
  // two stream slots or GPUs, driven by two worker threads).
  std::vector<float> host_a, host_b;
  std::unique_ptr<StageOptimizer> opt;
  int arrived = 0;
  uint64_t generation = 0;  // completed updates of the shared table
  std::mutex mu;
  std::condition_variable updated;
};

namespace {
int64_t tensors_bytes(const std::vector<Tensor>& ts) {
  int64_t b = 0;
  for (const Tensor& t : ts) b += t.bytes();
  return b;
}
void add_into(Tensor& dst, const Tensor& src) {
  PW_CHECK(dst.numel() == src.numel(), "gradient shapes differ");
  if (!dst.device().is_cpu()) {
    accumulate(dst, src);
    return;
  }
  float* d = dst.data();
  const float* s = src.data();
  for (int64_t i = 0; i < dst.numel(); ++i) d[i] += s[i];
}
// The value of a [1] tensor on the host (waits for its device).
float scalar_value(const Tensor& t) {
  if (t.device().is_cpu()) return t.data()[0];
  float v = 0;
  copy_to_host(t, &v);
  return v;
}
// dst = src, same size and device.
void copy_values(Tensor& dst, const Tensor& src) {
  PW_CHECK(dst.numel() == src.numel() && dst.device() == src.device(), "copy between tensors of different sizes");
  if (dst.device().is_cpu()) std::copy(src.data(), src.data() + src.numel(), dst.data());
  else dst.resource()->copy(dst.data(), src.data(), static_cast<size_t>(src.bytes()));
}
// The index of the first tensor holding a NaN or Inf, -1 if none (all on one device; on a
// device one read-back for the list).
int first_nonfinite(const std::vector<Tensor*>& ts) {
  if (ts.empty()) return -1;
  if (ts.front()->device().is_cpu()) {
    for (size_t i = 0; i < ts.size(); ++i)
      if (!all_finite(ts[i]->data(), ts[i]->numel())) return static_cast<int>(i);
    return -1;
  }
  const std::vector<bool> ok = finite_flags(ts);
  for (size_t i = 0; i < ok.size(); ++i)
    if (!ok[i]) return static_cast<int>(i);
  return -1;
}
}  // namespace

LayerStageCompute::LayerStageCompute(Network& net, std::vector<StageRange> ranges, ComputeConfig config, DataFn data,
                                     const OptimizerFactory& make_optimizer)
    : net_(net), config_(config), data_(std::move(data)) {
  if (ranges.empty()) throw InputError("pipeline: no stages");
  if (config_.batch < 1 || config_.micro_batch_size < 1 || config_.micro_batch_size > config_.batch)
    throw InputError("pipeline: micro-batch size must be in [1, batch]");
  num_micro_batches_ = static_cast<int>((config_.batch + config_.micro_batch_size - 1) / config_.micro_batch_size);
  int expect = 0;
  for (size_t s = 0; s < ranges.size(); ++s) {
    if (ranges[s].begin != expect || ranges[s].end <= ranges[s].begin)
      throw InputError("pipeline: stage " + std::to_string(s) + " covers layers [" + std::to_string(ranges[s].begin) +
                       ", " + std::to_string(ranges[s].end) + "), expected a non-empty range starting at layer " +
                       std::to_string(expect));
    expect = ranges[s].end;
  }
  if (expect != net.size())
    throw InputError("pipeline: stages cover layers [0, " + std::to_string(expect) + ") but the model has " +
                     std::to_string(net.size()) + " layers");
  const auto& model = net.model();
  const int S = static_cast<int>(ranges.size());
  std::vector<int> stage_of_layer(net.size());
  for (int s = 0; s < S; ++s)
    for (int l = ranges[s].begin; l < ranges[s].end; ++l) stage_of_layer[l] = s;
  // Weights shared across stages: the tied embedding / LM head gets a copy per stage.
  const Network::TiedPair tie = net.tied_pair();
  const bool split_tie = tie.embedding >= 0 && stage_of_layer[tie.embedding] != stage_of_layer[tie.head];
  if (split_tie && config_.asynchronous)
    throw InputError("pipeline: layer \"" + net.layer(tie.head).name() +
                     "\" is tied to the embedding on another stage; tied embeddings split across stages need a "
                     "synchronous schedule (put both in one stage for pipedream-async / 2bw)");
  if (split_tie) {
    tied_ = std::make_unique<Tied>();
    tied_->a = tie.table;
    tied_->grad_a = tie.table_grad;
    const Device dev_a = net.layer_device(tie.embedding), dev_b = net.layer_device(tie.head);
    tied_->b = copy_to_device(*tie.table, dev_b);
    tied_->grad_b = Tensor::zeros(tie.table->shape(), device_memory(dev_b));
    tied_->sum = Tensor::zeros(tie.table->shape(), device_memory(dev_a));
    net.retie_head(&tied_->b, &tied_->grad_b);
    tied_->opt = make_optimizer({tied_->a}, {&tied_->sum});
  }
  for (int s = 0; s < S; ++s) {
    auto st = std::make_unique<Stage>();
    st->range = std::make_unique<LayerRange>(net, ranges[s].begin, ranges[s].end);
    st->device = net.layer_device(ranges[s].begin);
    for (int l = ranges[s].begin; l < ranges[s].end; ++l)
      PW_CHECK(net.layer_device(l) == st->device, "pipeline: a stage's layers on different devices");
    st->recompute = ranges[s].recompute;
    for (Tensor* p : st->range->parameters())
      if (!tied_ || p != tied_->a) st->params.push_back(p);
    for (int l = ranges[s].begin; l < ranges[s].end; ++l) {
      st->grads_before.push_back(st->grads.size());
      for (Tensor* g : net.layer(l).gradients())
        if (!tied_ || g != tied_->grad_a) st->grads.push_back(g);
    }
    st->grads_before.push_back(st->grads.size());
    st->tied_owner = split_tie && (s == stage_of_layer[tie.embedding] || s == stage_of_layer[tie.head]);
    st->tied_head = split_tie && s == stage_of_layer[tie.head];
    st->opt = make_optimizer(st->params, st->grads);
    if (config_.asynchronous && config_.double_buffered) st->shadow = clone_params(*st);
    stages_.push_back(std::move(st));
  }
  // Cut c: names produced at stage <= c and read by a stage > c, in producer order.
  cuts_.assign(S > 1 ? S - 1 : 0, {});
  std::map<std::string, int> last_reader;
  for (int s = 0; s < S; ++s)
    for (const auto& in : stages_[s]->range->inputs())
      if (in.name != kDataInput && in.name != kTargetInput) last_reader[in.name] = s;
  for (int l = 0; l < net.size(); ++l) {
    auto it = last_reader.find(model.layers()[l].name);
    if (it == last_reader.end()) continue;
    for (int c = stage_of_layer[l]; c < it->second; ++c) cuts_[c].push_back(it->first);
  }
  auto index_in = [](const std::vector<std::string>& v, const std::string& n) {
    auto it = std::find(v.begin(), v.end(), n);
    return it == v.end() ? -1 : static_cast<int>(it - v.begin());
  };
  static const std::vector<std::string> kNone;
  for (int s = 0; s < S; ++s) {
    Stage& st = *stages_[s];
    const auto& incoming = s > 0 ? cuts_[s - 1] : kNone;
    const auto& outgoing = s + 1 < S ? cuts_[s] : kNone;
    for (const auto& in : st.range->inputs()) {
      if (in.name == kDataInput) st.in_src.push_back(-1);
      else if (in.name == kTargetInput) st.in_src.push_back(-2);
      else st.in_src.push_back(index_in(incoming, in.name));
      PW_CHECK(st.in_src.back() != -1 || in.name == kDataInput, "range input missing from the cut: " + in.name);
      st.in_clone.push_back(index_in(outgoing, in.name) >= 0);
    }
    const auto& outs = st.range->outputs();
    for (const auto& name : outgoing) {
      const int k = index_in(
          [&] {
            std::vector<std::string> v;
            for (const auto& o : outs) v.push_back(o.name);
            return v;
          }(),
          name);
      if (k >= 0) {
        st.out_src.push_back(k);
      } else {
        const int p = index_in(incoming, name);
        PW_CHECK(p >= 0, "cut tensor neither produced nor received: " + name);
        st.out_src.push_back(-(p + 1));
      }
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      if (net.layer(model.index_of(outs[k].name)).is_loss()) {
        st.loss_output = static_cast<int>(k);
        loss_stage_ = s;
      }
      st.grad_src.push_back(index_in(outgoing, outs[k].name));
    }
    std::vector<std::string> in_names;
    for (const auto& in : st.range->inputs()) in_names.push_back(in.name);
    for (const auto& name : incoming) {
      st.bgrad_input.push_back(index_in(in_names, name));
      st.bgrad_pass.push_back(index_in(outgoing, name));
    }
  }
}

LayerStageCompute::~LayerStageCompute() {
  if (tied_) net_.retie_head(tied_->a, tied_->grad_a);  // the network outlives this compute
}

const std::vector<std::string>& LayerStageCompute::cut(int c) const { return cuts_.at(c); }

int64_t LayerStageCompute::micro_batch_count(int j) const {
  const int64_t first = j * config_.micro_batch_size;
  return std::min(config_.micro_batch_size, config_.batch - first);
}

std::vector<Tensor> LayerStageCompute::clone_params(Stage& st) {
  std::vector<Tensor> out;
  out.reserve(st.params.size());
  for (Tensor* p : st.params) out.push_back(p->clone());
  return out;
}

void LayerStageCompute::note_activation_peak(Stage& st) {
  int64_t b = 0;
  for (int mb : st.in_flight) b += st.range->stash_bytes(mb);
  st.peak_act = std::max(st.peak_act, b);
}

std::vector<Tensor> LayerStageCompute::forward(const OpContext& c, std::vector<Tensor> input) {
  Stage& st = stage(c.stage);
  const int64_t count = micro_batch_count(c.micro_batch);
  const int64_t first = c.micro_batch * config_.micro_batch_size;
  const auto& rin = st.range->inputs();
  // Data and targets of this micro-batch, for the inputs that need them.
  Tensor data, targets;
  for (size_t k = 0; k < rin.size(); ++k) {
    if (st.in_src[k] == -1) data = Tensor(with_batch(count, rin[k].sample_shape));
    if (st.in_src[k] == -2) targets = Tensor(with_batch(count, rin[k].sample_shape));
  }
  if (!data.empty() || !targets.empty()) {
    data_(c.iteration, first, count, data.empty() ? nullptr : &data, targets.empty() ? nullptr : &targets);
    data = placed_on(std::move(data), st.device);
    targets = placed_on(std::move(targets), st.device);
  }
  std::vector<Tensor> range_in;
  for (size_t k = 0; k < rin.size(); ++k) {
    const int src = st.in_src[k];
    if (src == -1) range_in.push_back(std::move(data));
    else if (src == -2) range_in.push_back(std::move(targets));
    else range_in.push_back(st.in_clone[k] ? input.at(src).clone() : std::move(input.at(src)));
  }
  // Weight version for this micro-batch (asynchronous schedules).
  std::vector<Tensor> outs;
  const bool two_bw = config_.asynchronous && config_.double_buffered;
  if (two_bw) {
    for (size_t i = 0; i < st.params.size(); ++i) std::swap(*st.params[i], st.shadow[i]);
    try {
      outs = st.range->forward(c.micro_batch, std::move(range_in), c.iteration, first);
    } catch (...) {
      for (size_t i = 0; i < st.params.size(); ++i) std::swap(*st.params[i], st.shadow[i]);
      throw;
    }
    for (size_t i = 0; i < st.params.size(); ++i) std::swap(*st.params[i], st.shadow[i]);
  } else if (config_.asynchronous && config_.weight_stashing) {
    std::vector<Tensor> w;
    if (c.weight_version >= 0) {
      st.keep_history = true;
      st.last_requested = c.weight_version;
      for (auto it = st.history.begin(); it != st.history.end() && it->first < st.last_requested;)
        it = st.history.erase(it);
    }
    if (c.weight_version >= 0 && c.weight_version != st.version) {
      auto it = st.history.find(c.weight_version);
      PW_CHECK(it != st.history.end(), "weight version " + std::to_string(c.weight_version) + " of stage " +
                                           std::to_string(c.stage) + " is gone");
      for (const Tensor& t : it->second) w.push_back(t.clone());
    } else {
      w = clone_params(st);
    }
    for (size_t i = 0; i < w.size(); ++i) std::swap(*st.params[i], w[i]);
    try {
      outs = st.range->forward(c.micro_batch, std::move(range_in), c.iteration, first);
    } catch (...) {
      for (size_t i = 0; i < w.size(); ++i) std::swap(*st.params[i], w[i]);
      throw;
    }
    for (size_t i = 0; i < w.size(); ++i) std::swap(*st.params[i], w[i]);
    st.stashed[c.micro_batch] = std::move(w);
  } else {
    outs = st.range->forward(c.micro_batch, std::move(range_in), c.iteration, first);
  }
  st.in_flight.insert(c.micro_batch);
  if (st.loss_output >= 0) {
    const float l = scalar_value(outs[st.loss_output]);
    if (!std::isfinite(l))
      throw NumericalFault(c.iteration + 1, c.stage, st.range->outputs()[st.loss_output].name, "loss",
                           std::isnan(l) ? "NaN" : "Inf");
    st.losses[{c.iteration, c.micro_batch}] = l;
  }
  note_activation_peak(st);
  if (st.recompute) st.range->drop_stash(c.micro_batch);
  // Payload for the next stage: own outputs and pass-through tensors (left in `input`).
  std::vector<Tensor> payload;
  for (int src : st.out_src) payload.push_back(src >= 0 ? std::move(outs[src]) : std::move(input.at(-src - 1)));
  return payload;
}

std::vector<Tensor> LayerStageCompute::backward_common(const OpContext& c, std::vector<Tensor> grad, bool fused) {
  Stage& st = stage(c.stage);
  PW_CHECK(st.in_flight.count(c.micro_batch), "backward of a micro-batch that is not in flight");
  const auto& outs = st.range->outputs();
  std::vector<Tensor> grad_out(outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    if (static_cast<int>(k) == st.loss_output) {
      Tensor scale(std::vector<int64_t>{1});
      scale.data()[0] = config_.asynchronous && !config_.double_buffered
                            ? 1.0f
                            : static_cast<float>(static_cast<double>(micro_batch_count(c.micro_batch)) /
                                                 static_cast<double>(config_.batch));
      grad_out[k] = placed_on(std::move(scale), st.device);
    } else if (st.grad_src[k] >= 0 && !grad.at(st.grad_src[k]).empty()) {
      // Pass-through gradients keep their slot in `grad`; own outputs' gradients move here.
      grad_out[k] = std::move(grad[st.grad_src[k]]);
    }
  }
  // The micro-batch's weight version (stashed or 2BW's W(t-1)) is installed for the
  // recomputed forward and B alike.
  auto it = st.stashed.find(c.micro_batch);
  std::vector<Tensor>* w = it != st.stashed.end() ? &it->second : nullptr;
  if (config_.asynchronous && config_.double_buffered) w = &st.shadow;
  if (w)
    for (size_t i = 0; i < w->size(); ++i) std::swap(*st.params[i], (*w)[i]);
  std::vector<Tensor> gin;
  try {
    if (st.recompute) {
      st.range->recompute(c.micro_batch);
      note_activation_peak(st);
    }
    const std::function<void(int)> done = [&](int layer) {
      (*c.grads_done)(st.grads_before[layer - st.range->begin()]);
    };
    gin = fused ? st.range->backward(c.micro_batch, std::move(grad_out), c.grads_done ? &done : nullptr)
                : st.range->backward_input(c.micro_batch, std::move(grad_out));
  } catch (...) {
    if (w)
      for (size_t i = 0; i < w->size(); ++i) std::swap(*st.params[i], (*w)[i]);
    throw;
  }
  if (w) {
    for (size_t i = 0; i < w->size(); ++i) std::swap(*st.params[i], (*w)[i]);
    if (it != st.stashed.end()) st.stashed.erase(it);  // W does not read parameters
  }
  if (fused) st.in_flight.erase(c.micro_batch);
  // Gradient payload for the previous stage: own input gradients plus pass-through gradients.
  std::vector<Tensor> payload;
  for (size_t n = 0; n < st.bgrad_input.size(); ++n) {
    Tensor g;
    if (st.bgrad_input[n] >= 0) g = std::move(gin[st.bgrad_input[n]]);
    if (st.bgrad_pass[n] >= 0 && !grad.at(st.bgrad_pass[n]).empty()) {
      Tensor& pass = grad[st.bgrad_pass[n]];
      if (g.empty()) g = std::move(pass);
      else add_into(g, pass);
    }
    payload.push_back(std::move(g));
  }
  return payload;
}

std::vector<Tensor> LayerStageCompute::backward_input(const OpContext& c, std::vector<Tensor> grad) {
  return backward_common(c, std::move(grad), false);
}

std::vector<Tensor> LayerStageCompute::backward(const OpContext& c, std::vector<Tensor> grad) {
  return backward_common(c, std::move(grad), true);
}

void LayerStageCompute::backward_weight(const OpContext& c) {
  Stage& st = stage(c.stage);
  PW_CHECK(st.in_flight.count(c.micro_batch), "W of a micro-batch that is not in flight");
  const std::function<void(int)> done = [&](int layer) { (*c.grads_done)(st.grads_before[layer - st.range->begin()]); };
  st.range->backward_weight(c.micro_batch, c.grads_done ? &done : nullptr);
  st.in_flight.erase(c.micro_batch);
}

void LayerStageCompute::step(int s, int iteration) {
  Stage& st = stage(s);
  if (config_.asynchronous && config_.double_buffered) {
    if (++st.backwards_done < num_micro_batches_) return;  // the mini-batch is not complete yet
    st.backwards_done = 0;
    for (size_t i = 0; i < st.params.size(); ++i)  // W(t) becomes the version of mini-batch t+1
      copy_values(st.shadow[i], *st.params[i]);
  }
  // The in-context profiler prices this step as the same sequence per layer (finite check of
  // the gradients, update, finite check of the weights, zeroing: exec/profile/in_context.cc);
  // keep the two in step.
  check_finite(s, iteration + 1, false);
  if (st.keep_history) st.history[st.version] = clone_params(st);
  if (st.tied_owner) step_tied(st);
  st.opt->step();
  check_weights(s, iteration + 1);
  st.range->zero_grad();
  ++st.version;
}

StageState LayerStageCompute::checkpoint_state(int s) {
  Stage& st = stage(s);
  PW_CHECK(st.in_flight.empty() && st.stashed.empty(), "checkpoint of a stage with micro-batches in flight");
  StageState out;
  add_layer_parameters(net_, st.range->begin(), st.range->end(), out);
  add_optimizer_state(st.opt->state_tensors(), out);
  out.optimizer_steps = st.opt->steps();
  out.weight_version = st.version;
  return out;
}

void LayerStageCompute::restore_counters(int s, const StageState& state) {
  Stage& st = stage(s);
  st.opt->set_steps(state.optimizer_steps);
  st.version = state.weight_version;
}

void LayerStageCompute::check_weights(int s, int64_t step) { check_finite(s, step, true); }

void LayerStageCompute::check_finite(int s, int64_t step, bool weights) {
  Stage& st = stage(s);
  std::vector<Tensor*> ts;
  std::vector<int> layer_of;
  for (int l = st.range->begin(); l < st.range->end(); ++l)
    for (Tensor* t : weights ? net_.layer(l).parameters() : net_.layer(l).gradients()) {
      ts.push_back(t);
      layer_of.push_back(l);
    }
  const int bad = first_nonfinite(ts);
  if (bad < 0) return;
  throw NumericalFault(step, s, net_.layer(layer_of[bad]).name(),
                       weights ? "weights after the update" : "weight gradient", nonfinite_kind(*ts[bad]));
}

void LayerStageCompute::step_tied(Stage& st) {
  Tied& t = *tied_;
  const bool on_host = t.sum.device().is_cpu();
  std::unique_lock<std::mutex> lock(t.mu);
  // This stage's gradient of its copy: the embedding's (zeroed by its range) or the head's.
  // On a device it is read back here (waiting for this stage's stream), as the update below
  // may run on the other owner's thread.
  Tensor& mine = st.tied_head ? t.grad_b : *t.grad_a;
  if (on_host) {
    add_into(t.sum, mine);
  } else {
    std::vector<float>& staged = st.tied_head ? t.host_b : t.host_a;
    staged.resize(static_cast<size_t>(mine.numel()));
    copy_to_host(mine, staged.data());
  }
  if (st.tied_head) t.grad_b.fill(0.0f);
  if (++t.arrived < 2) {
    // The other owner applies the update to both copies; this stage's next forward (and its
    // weight check) read its copy, so wait until the update is done. Both owners reach their
    // step in every iteration of a synchronous schedule without needing the other's step, so
    // the wait ends unless the other worker failed: then give up after a bound.
    const uint64_t gen = t.generation;
    if (!t.updated.wait_for(lock, std::chrono::seconds(120), [&] { return t.generation != gen; }))
      throw std::runtime_error("tied embeddings: the other owner of the shared table did not reach its step in 120 s");
    return;
  }
  t.arrived = 0;
  if (on_host) {
    t.opt->step();
    std::copy(t.a->data(), t.a->data() + t.a->numel(), t.b.data());
    t.sum.fill(0.0f);
  } else {
    step_tied_on_devices(t, st.device);
  }
  ++t.generation;
  t.updated.notify_all();
}

// The other owner waits in step_tied with its stream idle, so this thread may queue on both
// devices: the summed gradient and the update on the embedding's, the new table on the head's.
void LayerStageCompute::step_tied_on_devices(Tied& t, Device mine) {
  std::vector<float>& v = t.host_a;  // the sum, then the new table (no table-sized allocation per step)
  for (size_t i = 0; i < v.size(); ++i) v[i] += t.host_b[i];
  struct BackToMine {  // this worker's own device again, on return and on a throw alike
    Device d;
    ~BackToMine() {
      try {
        bind_thread(d);
      } catch (...) {  // a failed device: the exception in flight says why
      }
    }
  } back{mine};
  bind_thread(t.sum.device());
  copy_from_host(v.data(), t.sum);
  t.opt->step();
  copy_to_host(*t.a, v.data());
  bind_thread(t.b.device());
  copy_from_host(v.data(), t.b);
}

int64_t LayerStageCompute::weight_version(int s) const { return stages_.at(s)->version; }

int64_t LayerStageCompute::weights_optimizer_bytes(int s) const {
  const Stage& st = *stages_.at(s);
  int64_t b = st.opt ? st.opt->state_bytes() : 0;
  for (Tensor* p : st.params) b += p->bytes();
  for (Tensor* g : st.grads) b += g->bytes();
  if (st.tied_owner) b += 2 * tied_->a->bytes();  // its copy of the table and that copy's gradient
  if (st.tied_head) b += tied_->sum.bytes() + tied_->opt->state_bytes();
  return b;
}

int64_t LayerStageCompute::memory_bytes(int s) const {
  const Stage& st = *stages_.at(s);
  int64_t b = weights_optimizer_bytes(s);
  for (const auto& [mb, w] : st.stashed) b += tensors_bytes(w);
  b += tensors_bytes(st.shadow);
  for (const auto& [v, w] : st.history) b += tensors_bytes(w);
  for (int mb : st.in_flight) b += st.range->stash_bytes(mb);
  return b;
}

std::vector<Tensor*> LayerStageCompute::weight_gradients(int s) { return stage(s).grads; }

double LayerStageCompute::loss_share(int iteration, int replica, int replicas) const {
  PW_CHECK(loss_stage_ >= 0, "the model has no loss layer");
  const Stage& st = *stages_[loss_stage_];
  double sum = 0;
  for (int j = replica; j < num_micro_batches_; j += replicas) {
    auto it = st.losses.find({iteration, j});
    PW_CHECK(it != st.losses.end(),
             "no loss recorded for iteration " + std::to_string(iteration) + " micro-batch " + std::to_string(j));
    sum += it->second * static_cast<double>(micro_batch_count(j));
  }
  return sum / static_cast<double>(config_.batch);
}

int64_t LayerStageCompute::peak_activation_bytes(int s) const { return stages_.at(s)->peak_act; }

void LayerStageCompute::reset_peaks() {
  for (auto& st : stages_) st->peak_act = 0;
}

double LayerStageCompute::loss(int iteration) const {
  PW_CHECK(loss_stage_ >= 0, "the model has no loss layer");
  const Stage& st = *stages_[loss_stage_];
  double sum = 0;
  for (int j = 0; j < num_micro_batches_; ++j) {
    auto it = st.losses.find({iteration, j});
    PW_CHECK(it != st.losses.end(), "no loss recorded for iteration " + std::to_string(iteration));
    sum += it->second * static_cast<double>(micro_batch_count(j));
  }
  return sum / static_cast<double>(config_.batch);
}

}  // namespace pw::exec
