#include "exec/layer.h"

#include "models/error.h"

namespace pw::exec {

int64_t Context::bytes() const {
  int64_t b = 0;
  for (const Tensor& t : saved) b += t.empty() ? 0 : t.bytes();
  for (const Context& c : children) b += c.bytes();
  return b;
}

void Context::clear() {  // keeps step and first_sample (see layer.h)
  saved.clear();
  children.clear();
  batch = 0;
  input_grads_done = false;
}

std::vector<Tensor> Layer::backward(Inputs in, Context& ctx, const Tensor& grad_out) {
  std::vector<Tensor> grads = backward_input(in, ctx, grad_out);
  backward_weight(in, ctx, grad_out);
  return grads;
}

void Layer::share_weight(Tensor*, Tensor*) {
  PW_CHECK(false, "layer \"" + name() + "\" cannot read a shared weight (only an lm_head can)");
}

void Layer::zero_grad() {
  for (Tensor* g : gradients()) g->fill(0.0f);
}

void Layer::register_parameter(Tensor* value, Tensor* grad) {
  PW_CHECK(value != nullptr && grad != nullptr, "a parameter needs a value and a gradient");
  params_.push_back(value);
  grads_.push_back(grad);
}

void Layer::register_parameters_of(Layer& part) {
  const std::vector<Tensor*> p = part.parameters(), g = part.gradients();
  PW_CHECK(p.size() == g.size(), "a part's parameters and gradients differ in number");
  for (size_t i = 0; i < p.size(); ++i) register_parameter(p[i], g[i]);
}

void Layer::clear_parameters() {
  params_.clear();
  grads_.clear();
}

int64_t Layer::parameter_bytes() {
  int64_t b = 0;
  for (Tensor* p : parameters()) b += p->bytes();
  return b;
}

void Layer::check_input(const Tensor& t, size_t index) const {
  const auto shapes = input_shapes();
  PW_CHECK(index < shapes.size(), "input index out of range");
  const auto& want = shapes[index];
  bool ok = t.shape().size() == want.size() + 1;
  for (size_t i = 0; ok && i < want.size(); ++i) ok = t.shape()[i + 1] == want[i];
  if (!ok) {
    std::string w = "[batch";
    for (int64_t d : want) w += "x" + std::to_string(d);
    throw InputError("layer \"" + name() + "\": input " + std::to_string(index) + " has shape " + t.shape_string() +
                     ", expected " + w + "]");
  }
}

}  // namespace pw::exec
