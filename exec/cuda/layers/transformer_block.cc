#include <string>

#include "exec/cuda/kernels.h"
#include "exec/cuda/layers/layers.h"
#include "exec/cuda/layers/parts.h"
#include "models/error.h"

namespace pw::exec::cuda {

CudaTransformerBlock::CudaTransformerBlock(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t seq, int64_t d_model,
                                           int64_t heads, int64_t ffn)
    : CudaLayer(std::move(twin), dev), seq_(seq), d_(d_model), ffn_(ffn), attn_(dev, seq, d_model, heads) {
  using Shape = std::vector<int64_t>;
  const int64_t d = d_model;
  const std::vector<Shape> want{{d}, {d}, {3 * d, d}, {3 * d}, {d, d}, {d}, {d}, {d}, {ffn, d}, {ffn}, {d, ffn}, {d}};
  bool ok = params_.size() == want.size();
  for (size_t i = 0; ok && i < want.size(); ++i) ok = params_[i].shape() == want[i];
  PW_CHECK(ok, "transformer_block twin parameters are not ln1, attention, ln2, fc1, fc2 in order");
}

Tensor CudaTransformerBlock::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const Tensor& x = *in[0];
  const int64_t b = x.dim(0), rows = b * seq_, d = d_;
  void* st = stream();
  ctx.children.resize(1);
  Tensor h1 = make(x.shape()), stats1 = make({rows, 2});
  kernels::layer_norm_forward(x.data(), params_[0].data(), params_[1].data(), h1.data(), stats1.data(), rows, d, st);
  Tensor x1 = attn_.forward_parts(h1, attention_params(), ctx.children[0]);
  kernels::add_into(x1.data(), x.data(), x1.numel(), st);
  Tensor h2 = make(x.shape()), stats2 = make({rows, 2});
  kernels::layer_norm_forward(x1.data(), params_[6].data(), params_[7].data(), h2.data(), stats2.data(), rows, d, st);
  Tensor f = make({b, seq_, ffn_});
  linear_forward(dev_, h2.data(), params_[8].data(), params_[9].data(), f.data(), rows, d, ffn_);
  Tensor g = make(f.shape());
  kernels::gelu_forward(f.data(), g.data(), f.numel(), st);
  Tensor y = make(x.shape());
  linear_forward(dev_, g.data(), params_[10].data(), params_[11].data(), y.data(), rows, ffn_, d);
  kernels::add_into(y.data(), x1.data(), y.numel(), st);
  ctx.saved.resize(kDF);
  ctx.saved[kH1] = std::move(h1);
  ctx.saved[kX1] = std::move(x1);
  ctx.saved[kH2] = std::move(h2);
  ctx.saved[kF] = std::move(f);
  ctx.saved[kG] = std::move(g);
  ctx.saved[kStats1] = std::move(stats1);
  ctx.saved[kStats2] = std::move(stats2);
  ctx.batch = b;
  return y;
}

Tensor CudaTransformerBlock::input_grads(const Tensor& x, Context& ctx, const Tensor& dy) {
  PW_CHECK(ctx.saved.size() == kDF, "transformer_block backward without its forward");
  const int64_t rows = x.dim(0) * seq_, d = d_;
  void* st = stream();
  Tensor df = make(ctx.saved[kF].shape());
  {
    Tensor dg = make(ctx.saved[kF].shape());
    linear_backward_input(dev_, dy.data(), params_[10].data(), dg.data(), rows, ffn_, d);
    kernels::gelu_backward(ctx.saved[kF].data(), dg.data(), df.data(), df.numel(), st);
  }
  Tensor dh2 = make(x.shape());
  linear_backward_input(dev_, df.data(), params_[8].data(), dh2.data(), rows, d, ffn_);
  Tensor dx1 = make(x.shape());
  kernels::layer_norm_backward_input(ctx.saved[kX1].data(), dh2.data(), params_[6].data(), ctx.saved[kStats2].data(),
                                     dx1.data(), rows, d, st);
  kernels::add_into(dx1.data(), dy.data(), dx1.numel(), st);
  Tensor dh1 = attn_.backward_parts(ctx.saved[kH1], attention_params(), ctx.children.at(0), dx1);
  Tensor dx = make(x.shape());
  kernels::layer_norm_backward_input(x.data(), dh1.data(), params_[0].data(), ctx.saved[kStats1].data(), dx.data(),
                                     rows, d, st);
  kernels::add_into(dx.data(), dx1.data(), dx.numel(), st);
  ctx.saved.push_back(std::move(df));
  ctx.saved.push_back(std::move(dh2));
  ctx.saved.push_back(std::move(dx1));
  ctx.saved.push_back(std::move(dh1));
  ctx.input_grads_done = true;
  return dx;
}

std::vector<Tensor> CudaTransformerBlock::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  std::vector<Tensor> r;
  r.push_back(input_grad_for_b(ctx, kDX, [&] { return input_grads(*in[0], ctx, grad_out); }));
  return r;
}

void CudaTransformerBlock::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  input_grad_for_w(ctx, ctx.input_grads_done, [&] { return input_grads(x, ctx, grad_out); });
  const int64_t rows = x.dim(0) * seq_, d = d_;
  const auto& s = ctx.saved;
  linear_backward_weight(dev_, s[kG].data(), grad_out.data(), grads_[10].data(), grads_[11].data(), rows, ffn_, d);
  linear_backward_weight(dev_, s[kH2].data(), s[kDF].data(), grads_[8].data(), grads_[9].data(), rows, d, ffn_);
  layer_norm_weight(dev_, s[kX1].data(), s[kDH2].data(), s[kStats2].data(), grads_[6].data(), grads_[7].data(), rows,
                    d);
  attn_.weight_parts(s[kH1], ctx.children.at(0), s[kDX1], attention_grads());
  layer_norm_weight(dev_, x.data(), s[kDH1].data(), s[kStats1].data(), grads_[0].data(), grads_[1].data(), rows, d);
}

}  // namespace pw::exec::cuda
