#include "exec/layers/transformer_block.h"

#include "exec/layers/common.h"
#include "exec/layers/elementwise.h"
#include "models/error.h"

namespace pw::exec {

namespace {
models::LayerSpec part(const models::LayerSpec& parent, const std::string& name, models::LayerKind kind,
                       std::vector<int64_t> out) {
  models::LayerSpec s;
  s.name = parent.name + "." + name;
  s.kind = kind;
  s.output_shape = std::move(out);
  return s;
}
Tensor first(std::vector<Tensor> v) { return std::move(v.at(0)); }

// saved slots
enum { kH1, kX1, kH2, kF, kG, kDF, kDH2, kDX1, kDH1, kDX };
// children slots
enum { cLn1, cAttn, cLn2, cFc1, cFc2 };
}  // namespace

TransformerBlock::TransformerBlock(models::LayerSpec spec, int64_t seq, int64_t d_model, int64_t heads, int64_t ffn)
    : Layer(std::move(spec)), seq_(seq), d_(d_model), ffn_(ffn) {
  using K = models::LayerKind;
  if (ffn < 1) throw InputError("layer \"" + name() + "\": ffn must be >= 1");
  ln1_ = std::make_unique<LayerNorm>(part(spec_, "ln1", K::layer_norm, {seq, d_model}),
                                     std::vector<int64_t>{seq, d_model}, d_model);
  ln2_ = std::make_unique<LayerNorm>(part(spec_, "ln2", K::layer_norm, {seq, d_model}),
                                     std::vector<int64_t>{seq, d_model}, d_model);
  attn_ = std::make_unique<Attention>(part(spec_, "attn", K::attention, {seq, d_model}), seq, d_model, heads);
  fc1_ = std::make_unique<Linear>(part(spec_, "fc1", K::linear, {seq, ffn}), d_model, ffn, true);
  fc2_ = std::make_unique<Linear>(part(spec_, "fc2", K::linear, {seq, d_model}), ffn, d_model, true);
  fc1_->set_init_std(0.02);
  fc2_->set_init_std(0.02);
  for (Layer* l : std::initializer_list<Layer*>{ln1_.get(), attn_.get(), ln2_.get(), fc1_.get(), fc2_.get()})
    register_parameters_of(*l);
}

void TransformerBlock::init_parameters(uint64_t seed) {
  ln1_->init_parameters(0);
  ln2_->init_parameters(0);
  attn_->init_parameters(mix_seed(seed, 1));
  fc1_->init_parameters(mix_seed(seed, 2));
  fc2_->init_parameters(mix_seed(seed, 3));
}

Tensor TransformerBlock::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  ctx.children.resize(5);
  auto& c = ctx.children;
  const Tensor* xin[] = {&x};
  Tensor h1 = ln1_->forward(xin, c[cLn1]);
  Tensor x1 = attn_->forward_parts(h1, c[cAttn]);
  add_into(x1.data(), x.data(), x1.numel());
  const Tensor* x1in[] = {&x1};
  Tensor h2 = ln2_->forward(x1in, c[cLn2]);
  const Tensor* h2in[] = {&h2};
  Tensor f = fc1_->forward(h2in, c[cFc1]);
  Tensor g(f.shape());
  gelu_forward(f.data(), g.data(), f.numel());
  const Tensor* gin[] = {&g};
  Tensor y = fc2_->forward(gin, c[cFc2]);
  add_into(y.data(), x1.data(), y.numel());
  ctx.saved.push_back(std::move(h1));
  ctx.saved.push_back(std::move(x1));
  ctx.saved.push_back(std::move(h2));
  ctx.saved.push_back(std::move(f));
  ctx.saved.push_back(std::move(g));
  ctx.batch = x.dim(0);
  return y;
}

Tensor TransformerBlock::input_grads(const Tensor& x, Context& ctx, const Tensor& dy) {
  auto& s = ctx.saved;
  auto& c = ctx.children;
  const Tensor* gin[] = {&s[kG]};
  Tensor dg = first(fc2_->backward_input(gin, c[cFc2], dy));
  Tensor df(dg.shape());
  gelu_backward(s[kF].data(), dg.data(), df.data(), df.numel());
  dg = Tensor();
  const Tensor* h2in[] = {&s[kH2]};
  Tensor dh2 = first(fc1_->backward_input(h2in, c[cFc1], df));
  const Tensor* x1in[] = {&s[kX1]};
  Tensor dx1 = first(ln2_->backward_input(x1in, c[cLn2], dh2));
  add_into(dx1.data(), dy.data(), dx1.numel());
  Tensor dh1 = attn_->backward_parts(s[kH1], c[cAttn], dx1);
  const Tensor* xin[] = {&x};
  Tensor dx = first(ln1_->backward_input(xin, c[cLn1], dh1));
  add_into(dx.data(), dx1.data(), dx.numel());
  s.push_back(std::move(df));
  s.push_back(std::move(dh2));
  s.push_back(std::move(dx1));
  s.push_back(std::move(dh1));
  ctx.input_grads_done = true;
  return dx;
}

std::vector<Tensor> TransformerBlock::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  std::vector<Tensor> r;
  r.push_back(input_grad_for_b(ctx, kDX, [&] { return input_grads(*in[0], ctx, grad_out); }));
  return r;
}

void TransformerBlock::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  input_grad_for_w(ctx, ctx.input_grads_done, [&] { return input_grads(*in[0], ctx, grad_out); });
  auto& s = ctx.saved;
  auto& c = ctx.children;
  const Tensor* gin[] = {&s[kG]};
  fc2_->backward_weight(gin, c[cFc2], grad_out);
  const Tensor* h2in[] = {&s[kH2]};
  fc1_->backward_weight(h2in, c[cFc1], s[kDF]);
  const Tensor* x1in[] = {&s[kX1]};
  ln2_->backward_weight(x1in, c[cLn2], s[kDH2]);
  attn_->weight_parts(s[kH1], c[cAttn], s[kDX1]);
  const Tensor* xin[] = {in[0]};
  ln1_->backward_weight(xin, c[cLn1], s[kDH1]);
}

}  // namespace pw::exec
