#include "exec/layers/network.h"

#include <algorithm>

#include "exec/device_ops.h"
#include "exec/layers/common.h"
#include "models/error.h"

namespace pw::exec {

// ---------------------------------------------------------------- Network

Network::Network(const models::Model& model, uint64_t seed, Device device)
    : model_(model), device_(device), layer_devices_(model.layers().size(), device) {
  build(seed);
}

Network::Network(const models::Model& model, uint64_t seed, std::vector<Device> layer_devices)
    : model_(model), layer_devices_(std::move(layer_devices)) {
  PW_CHECK(layer_devices_.size() == model_.layers().size(), "Network: one device per layer expected");
  if (!layer_devices_.empty()) device_ = layer_devices_.front();
  build(seed);
}

Network::Network(const models::Model& model, uint64_t seed, std::vector<Device> layer_devices, std::vector<bool> held)
    : model_(model), layer_devices_(std::move(layer_devices)) {
  PW_CHECK(layer_devices_.size() == model_.layers().size(), "Network: one device per layer expected");
  PW_CHECK(held.size() == model_.layers().size(), "Network: one held flag per layer expected");
  if (!layer_devices_.empty()) device_ = layer_devices_.front();
  build(seed, held);
}

namespace {

// The layers that give their parameters back (Network's `held` constructor): those not held,
// except the halves of a tied pair (an embedding lending its table to a tied head, and that head).
std::vector<bool> given_back(const models::Model& model, const std::vector<bool>& held) {
  std::vector<bool> out(model.layers().size(), false);
  if (held.empty()) return out;
  bool tied = false;
  for (const models::LayerSpec& l : model.layers())
    tied = tied || (l.kind == models::LayerKind::lm_head && l.attr_or("tied", 0) != 0);
  for (size_t i = 0; i < out.size(); ++i) {
    const models::LayerKind k = model.layers()[i].kind;
    out[i] = !held[i] && !(tied && (k == models::LayerKind::embedding || k == models::LayerKind::lm_head));
  }
  return out;
}

}  // namespace

void Network::build(uint64_t seed, const std::vector<bool>& held) {
  const auto& specs = model_.layers();
  const std::vector<bool> give_back = given_back(model_, held);
  bool gave_back = false;
  Layer* embedding = nullptr;  // the first layer lending a token table (exec/layer.h)
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& spec = specs[i];
    std::vector<std::vector<int64_t>> in;
    for (const std::string& p : spec.inputs) in.push_back(specs.at(model_.index_of(p)).output_shape);
    const Device device = layer_devices_[i];
    auto layer = device.is_cpu() ? make_layer(spec, in) : make_layer(spec, in, device);
    layer->init_parameters(mix_seed(seed, i + 1));
    if (give_back[i]) {
      for (Tensor* t : layer->parameters()) *t = Tensor();
      for (Tensor* t : layer->gradients()) *t = Tensor();
      gave_back = true;
    }
    if (!embedding && layer->token_table()) embedding = layer.get();
    if (spec.kind == models::LayerKind::lm_head && spec.attr_or("tied", 0) != 0) {
      if (!embedding)
        throw InputError("layer \"" + spec.name + "\" (lm_head): tied = 1 but no embedding layer precedes it");
      Layer* head = layer.get();
      if (embedding->token_table()->shape() != std::vector<int64_t>{spec.attr("vocab"), spec.attr("d_model")})
        throw InputError("layer \"" + spec.name + "\" (lm_head): tied to embedding \"" + embedding->name() +
                         "\" whose table has shape " + embedding->token_table()->shape_string());
      tie_head(*head, device, embedding->token_table(), embedding->token_table_grad());
      tied_ = {model_.index_of(embedding->name()), static_cast<int>(i), embedding->token_table(),
               embedding->token_table_grad()};
    }
    if (layer->is_loss()) {
      auto shapes = layer->input_shapes();
      target_shape_ = shapes.back();
    }
    layers_.push_back(std::move(layer));
  }
  // The given-back buffers sit in the host allocator's cache, resident, and of sizes the held
  // layers may never ask for again: return them to the system.
  if (gave_back) Allocator::global().release_cache();
}

std::vector<Tensor*> Network::parameters() {
  std::vector<Tensor*> p;
  for (auto& l : layers_)
    for (Tensor* t : l->parameters()) p.push_back(t);
  return p;
}

std::vector<Tensor*> Network::gradients() {
  std::vector<Tensor*> g;
  for (auto& l : layers_)
    for (Tensor* t : l->gradients()) g.push_back(t);
  return g;
}

void Network::zero_grad() {
  for (auto& l : layers_) l->zero_grad();
}

void Network::retie_head(Tensor* weight, Tensor* grad) {
  PW_CHECK(tied_.head >= 0, "retie_head without a tied head");
  tie_head(*layers_.at(tied_.head), layer_devices_.at(static_cast<size_t>(tied_.head)), weight, grad);
}

void Network::tie_head(Layer& head, Device at, Tensor* weight, Tensor* grad) {
  if (weight->device() == at) {
    head.share_weight(weight, grad);
    head_table_ = Tensor();  // a copy made earlier is no longer read
    head_table_grad_ = Tensor();
    return;
  }
  // The layers of another device cannot read the table: a copy on the head's.
  head_table_ = copy_to_device(*weight, at);
  head_table_grad_ = Tensor::zeros(weight->shape(), device_memory(at));
  head.share_weight(&head_table_, &head_table_grad_);
}

void Network::set_batch_norm_group(int64_t g) {
  for (auto& l : layers_) l->set_statistics_group(g);
}

int64_t Network::parameter_bytes() {
  int64_t b = 0;
  for (auto& l : layers_) b += l->parameter_bytes();
  return b;
}

// ---------------------------------------------------------------- LayerRange

struct LayerRange::MicroBatch {
  std::vector<Tensor> inputs;          // boundary inputs
  std::vector<Tensor> acts;            // per layer in range: output, if read inside the range
  std::vector<Context> ctx;            // per layer in range
  std::vector<Tensor> grad_out;        // per layer: output gradient kept from B until W
  int64_t step = 0, first_sample = 0;  // Context::step / first_sample of every layer
  bool stashed = false;                // acts + ctx valid
  bool input_done = false;             // B ran
};

LayerRange::LayerRange(Network& net, int begin, int end) : net_(net), begin_(begin), end_(end) {
  if (begin < 0 || end > net.size() || begin >= end)
    throw InputError("layer range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") is empty or outside the model's " + std::to_string(net.size()) + " layers");
  const auto& model = net.model();
  const auto& specs = model.layers();
  const int n = end - begin;
  sources_.resize(n);
  read_inside_.assign(n, false);
  first_reader_.assign(n, -1);
  auto boundary = [&](const std::string& name, std::vector<int64_t> shape) {
    for (size_t k = 0; k < inputs_.size(); ++k)
      if (inputs_[k].name == name) return -static_cast<int>(k) - 1;
    inputs_.push_back({name, std::move(shape)});
    return -static_cast<int>(inputs_.size());
  };
  for (int i = begin; i < end; ++i) {
    Layer& layer = net.layer(i);
    auto& src = sources_[i - begin];
    if (specs[i].kind == models::LayerKind::input) src.push_back(boundary(kDataInput, specs[i].output_shape));
    for (const std::string& p : specs[i].inputs) {
      const int j = model.index_of(p);
      if (j >= begin) {
        src.push_back(j);
        read_inside_[j - begin] = true;
        if (first_reader_[j - begin] < 0) first_reader_[j - begin] = i;
      } else {
        src.push_back(boundary(p, specs[j].output_shape));
      }
    }
    if (layer.is_loss()) {
      src.push_back(boundary(kTargetInput, layer.input_shapes().back()));
      has_loss_ = true;
    }
    PW_CHECK(static_cast<int>(src.size()) == layer.num_inputs(), "layer input count mismatch");
  }
  std::vector<bool> read_after(n, false), read_at_all(n, false);
  for (const auto& e : model.edges()) {
    if (e.from >= begin && e.from < end) {
      read_at_all[e.from - begin] = true;
      if (e.to >= end) read_after[e.from - begin] = true;
    }
  }
  for (int i = 0; i < n; ++i)
    if (read_after[i] || !read_at_all[i]) {
      outputs_.push_back({specs[begin + i].name, specs[begin + i].output_shape});
      output_layers_.push_back(begin + i);
    }
}

LayerRange::~LayerRange() = default;

void LayerRange::run_forward(MicroBatch& m, std::vector<Tensor>* outputs) {
  const int n = end_ - begin_;
  m.acts.clear();
  m.acts.resize(n);
  m.ctx.clear();
  m.ctx.resize(n);
  for (Context& c : m.ctx) {
    c.step = m.step;
    c.first_sample = m.first_sample;
  }
  size_t next_out = 0;
  std::vector<const Tensor*> ptrs;
  for (int i = 0; i < n; ++i) {
    ptrs.clear();
    for (int s : sources_[i]) ptrs.push_back(s >= 0 ? &m.acts[s - begin_] : &m.inputs[-s - 1]);
    Tensor y = net_.layer(begin_ + i).forward(ptrs, m.ctx[i]);
    const bool is_output = next_out < output_layers_.size() && output_layers_[next_out] == begin_ + i;
    if (is_output) {
      ++next_out;
      if (outputs) outputs->push_back(read_inside_[i] ? y.clone() : std::move(y));
    }
    if (read_inside_[i]) m.acts[i] = std::move(y);
  }
  m.stashed = true;
}

std::vector<Tensor> LayerRange::forward(int mb, std::vector<Tensor> inputs, int64_t step, int64_t first_sample) {
  PW_CHECK(!in_flight_.count(mb), "micro-batch " + std::to_string(mb) + " is already in flight");
  if (inputs.size() != inputs_.size())
    throw InputError("layer range: expected " + std::to_string(inputs_.size()) + " input tensors, got " +
                     std::to_string(inputs.size()));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    std::vector<int64_t> want = with_batch(t.empty() ? 0 : t.dim(0), inputs_[k].sample_shape);
    if (t.empty() || t.shape() != want || t.dim(0) != inputs[0].dim(0))
      throw InputError("layer range input \"" + inputs_[k].name + "\": shape " + t.shape_string() +
                       " does not match [batch" +
                       [&] {
                         std::string s;
                         for (int64_t d : inputs_[k].sample_shape) s += "x" + std::to_string(d);
                         return s;
                       }() +
                       "]");
  }
  auto m = std::make_unique<MicroBatch>();
  m->inputs = std::move(inputs);
  m->step = step;
  m->first_sample = first_sample;
  std::vector<Tensor> outputs;
  run_forward(*m, &outputs);
  in_flight_.emplace(mb, std::move(m));
  return outputs;
}

void LayerRange::run_backward(MicroBatch& m, std::vector<Tensor> grad_outputs, bool input, bool weight,
                              std::vector<Tensor>* input_grads, const std::function<void(int layer)>* weight_done) {
  const int n = end_ - begin_;
  if (!m.stashed) run_forward(m, nullptr);
  std::vector<Tensor> gacc(n);
  if (input) {
    PW_CHECK(grad_outputs.size() == outputs_.size(), "one gradient per range output expected");
    for (size_t k = 0; k < outputs_.size(); ++k) gacc[output_layers_[k] - begin_] = std::move(grad_outputs[k]);
    input_grads->clear();
    input_grads->resize(inputs_.size());
    m.grad_out.clear();
    m.grad_out.resize(n);
  }
  std::vector<const Tensor*> ptrs;
  // One layer's backward (`return`: on to the next layer).
  const auto layer_backward = [&](int i) {
    Layer& layer = net_.layer(begin_ + i);
    ptrs.clear();
    for (int s : sources_[i]) ptrs.push_back(s >= 0 ? &m.acts[s - begin_] : &m.inputs[-s - 1]);
    if (!input) {  // W after B
      if (!m.grad_out[i].empty()) layer.backward_weight(ptrs, m.ctx[i], m.grad_out[i]);
      return;
    }
    if (gacc[i].empty()) return;  // no gradient reaches this layer's output
    std::vector<Tensor> din =
        weight ? layer.backward(ptrs, m.ctx[i], gacc[i]) : layer.backward_input(ptrs, m.ctx[i], gacc[i]);
    if (!weight && layer.has_weight_grad()) m.grad_out[i] = std::move(gacc[i]);
    gacc[i] = Tensor();
    for (size_t k = 0; k < din.size(); ++k) {
      if (din[k].empty()) continue;
      const int s = sources_[i][k];
      Tensor& dst = s >= 0 ? gacc[s - begin_] : (*input_grads)[-s - 1];
      if (dst.empty()) dst = std::move(din[k]);
      else if (dst.device().is_cpu()) add_into(dst.data(), din[k].data(), dst.numel());
      else accumulate(dst, din[k]);
    }
  };
  for (int i = n - 1; i >= 0; --i) {
    layer_backward(i);
    release_after_backward(m, i, input, weight);
    if (weight && weight_done) (*weight_done)(begin_ + i);
  }
}

// Layers run backward in reverse order, so once layer i is done, an activation whose first
// reader is layer i has no reader left. After W (fused or alone) layer i's context and output
// gradient are dead, and so is every activation it was the first to read. After B alone, W still
// reads the inputs and context of every layer with a weight gradient: only the contexts of the
// other layers go, and the activations none of whose readers has one.
void LayerRange::release_after_backward(MicroBatch& m, int i, bool input, bool weight) {
  const bool has_w = net_.layer(begin_ + i).has_weight_grad();
  if (weight || !has_w) {
    m.ctx[i].clear();
    if (!m.grad_out.empty()) m.grad_out[i] = Tensor();
  }
  for (int s : sources_[i]) {
    if (s < 0 || first_reader_[s - begin_] != begin_ + i) continue;
    bool read_by_w = false;
    if (!weight)
      for (int j = s - begin_ + 1; j < end_ - begin_ && !read_by_w; ++j)
        for (int r : sources_[j])
          if (r == s && net_.layer(begin_ + j).has_weight_grad()) read_by_w = true;
    if (!read_by_w) m.acts[s - begin_] = Tensor();
  }
}

std::vector<Tensor> LayerRange::backward_input(int mb, std::vector<Tensor> grad_outputs) {
  auto it = in_flight_.find(mb);
  PW_CHECK(it != in_flight_.end(), "backward of micro-batch " + std::to_string(mb) + " that is not in flight");
  PW_CHECK(!it->second->input_done, "B of micro-batch " + std::to_string(mb) + " ran twice");
  std::vector<Tensor> grads;
  run_backward(*it->second, std::move(grad_outputs), true, false, &grads, nullptr);
  it->second->input_done = true;
  return grads;
}

void LayerRange::backward_weight(int mb, const std::function<void(int layer)>* weight_done) {
  auto it = in_flight_.find(mb);
  PW_CHECK(it != in_flight_.end() && it->second->input_done,
           "W of micro-batch " + std::to_string(mb) + " before its B");
  run_backward(*it->second, {}, false, true, nullptr, weight_done);
  in_flight_.erase(it);
}

std::vector<Tensor> LayerRange::backward(int mb, std::vector<Tensor> grad_outputs,
                                         const std::function<void(int layer)>* weight_done) {
  auto it = in_flight_.find(mb);
  PW_CHECK(it != in_flight_.end() && !it->second->input_done,
           "backward of micro-batch " + std::to_string(mb) + " that is not in flight");
  std::vector<Tensor> grads;
  run_backward(*it->second, std::move(grad_outputs), true, true, &grads, weight_done);
  in_flight_.erase(it);
  return grads;
}

void LayerRange::drop_stash(int mb) {
  auto it = in_flight_.find(mb);
  PW_CHECK(it != in_flight_.end() && !it->second->input_done,
           "drop_stash of micro-batch " + std::to_string(mb) + " not in flight or past its B");
  it->second->acts.clear();
  it->second->ctx.clear();
  it->second->stashed = false;
}

void LayerRange::recompute(int mb) {
  auto it = in_flight_.find(mb);
  PW_CHECK(it != in_flight_.end(), "recompute of micro-batch " + std::to_string(mb) + " not in flight");
  if (!it->second->stashed) run_forward(*it->second, nullptr);
}

void LayerRange::release(int mb) { in_flight_.erase(mb); }

bool LayerRange::in_flight(int mb) const { return in_flight_.count(mb) > 0; }

int LayerRange::num_in_flight() const { return static_cast<int>(in_flight_.size()); }

int64_t LayerRange::stash_bytes(int mb) const {
  auto it = in_flight_.find(mb);
  if (it == in_flight_.end()) return 0;
  const MicroBatch& m = *it->second;
  int64_t b = 0;
  for (const auto* v : {&m.inputs, &m.acts, &m.grad_out})
    for (const Tensor& t : *v) b += t.empty() ? 0 : t.bytes();
  for (const Context& c : m.ctx) b += c.bytes();
  return b;
}

std::vector<Tensor*> LayerRange::parameters() {
  std::vector<Tensor*> p;
  for (int i = begin_; i < end_; ++i)
    for (Tensor* t : net_.layer(i).parameters()) p.push_back(t);
  return p;
}

std::vector<Tensor*> LayerRange::gradients() {
  std::vector<Tensor*> g;
  for (int i = begin_; i < end_; ++i)
    for (Tensor* t : net_.layer(i).gradients()) g.push_back(t);
  return g;
}

void LayerRange::zero_grad() {
  for (int i = begin_; i < end_; ++i) net_.layer(i).zero_grad();
}

}  // namespace pw::exec
