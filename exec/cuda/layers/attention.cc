#include <cmath>
#include <string>

#include "exec/cuda/gemm.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/layers/layers.h"
#include "exec/cuda/layers/parts.h"
#include "models/error.h"

namespace pw::exec::cuda {

namespace {
// One product of attention_gemms on the tensors its fields name.
void attention_product(CudaDevice& dev, const ViewProduct& p, const float* a, const float* b, float* c) {
  gemm(dev, p.shape, a + p.a_offset, b + p.b_offset, c + p.c_offset);
}
}  // namespace

CudaAttentionParts::CudaAttentionParts(CudaDevice& dev, int64_t seq, int64_t d_model, int64_t heads)
    : dev_(dev), seq_(seq), d_(d_model), heads_(heads) {
  if (seq < 1 || d_model < 1 || heads < 1 || d_model % heads != 0)
    throw InputError("attention: d_model " + std::to_string(d_model) + " must be a positive multiple of heads " +
                     std::to_string(heads));
  scale_ = 1.0f / std::sqrt(static_cast<float>(d_model / heads));
}

Tensor CudaAttentionParts::forward_parts(const Tensor& x, const Params& p, Context& ctx) {
  ctx.clear();
  const int64_t b = x.dim(0), rows = b * seq_, d = d_;
  const AttentionGemms g = attention_gemms(b, seq_, d, heads_);
  Tensor qkv = make({b, seq_, 3 * d});
  linear_forward(dev_, x.data(), p[0]->data(), p[1]->data(), qkv.data(), rows, d, 3 * d);
  Tensor probs = make({b, heads_, seq_, seq_});
  attention_product(dev_, g.scores, qkv.data(), qkv.data(), probs.data());
  kernels::causal_softmax_forward(probs.data(), b * heads_ * seq_, seq_, scale_, dev_.stream());
  Tensor a = make({b, seq_, d});
  attention_product(dev_, g.mix, probs.data(), qkv.data(), a.data());
  Tensor y = make({b, seq_, d});
  linear_forward(dev_, a.data(), p[2]->data(), p[3]->data(), y.data(), rows, d, d);
  ctx.saved.resize(kCount - 1);
  ctx.saved[kQkv] = std::move(qkv);
  ctx.saved[kA] = std::move(a);
  ctx.saved[kProbs] = std::move(probs);
  ctx.batch = b;
  return y;
}

Tensor CudaAttentionParts::backward_parts(const Tensor& x, const Params& p, Context& ctx, const Tensor& dy) {
  PW_CHECK(ctx.saved.size() >= kDqkv, "attention backward without its forward");
  const int64_t b = x.dim(0), rows = b * seq_, d = d_;
  const AttentionGemms g = attention_gemms(b, seq_, d, heads_);
  const Tensor& qkv = ctx.saved[kQkv];
  const Tensor& probs = ctx.saved[kProbs];
  Tensor da = make({b, seq_, d});
  linear_backward_input(dev_, dy.data(), p[2]->data(), da.data(), rows, d, d);
  Tensor dqkv = make({b, seq_, 3 * d});
  attention_product(dev_, g.d_v, probs.data(), da.data(), dqkv.data());
  Tensor ds = make({b, heads_, seq_, seq_});
  attention_product(dev_, g.d_probs, da.data(), qkv.data(), ds.data());
  kernels::causal_softmax_backward(probs.data(), ds.data(), b * heads_ * seq_, seq_, scale_, dev_.stream());
  attention_product(dev_, g.d_q, ds.data(), qkv.data(), dqkv.data());
  attention_product(dev_, g.d_k, ds.data(), qkv.data(), dqkv.data());
  Tensor dx = make({b, seq_, d});
  linear_backward_input(dev_, dqkv.data(), p[0]->data(), dx.data(), rows, d, 3 * d);
  ctx.saved.resize(kDqkv);
  ctx.saved.push_back(std::move(dqkv));
  return dx;
}

void CudaAttentionParts::weight_parts(const Tensor& x, Context& ctx, const Tensor& dy, const Params& grads) {
  PW_CHECK(ctx.saved.size() > kDqkv, "attention W before its input gradients were computed");
  const int64_t rows = x.dim(0) * seq_, d = d_;
  linear_backward_weight(dev_, ctx.saved[kA].data(), dy.data(), grads[2]->data(), grads[3]->data(), rows, d, d);
  linear_backward_weight(dev_, x.data(), ctx.saved[kDqkv].data(), grads[0]->data(), grads[1]->data(), rows, d, 3 * d);
}

CudaAttention::CudaAttention(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t seq, int64_t d_model, int64_t heads)
    : CudaLayer(std::move(twin), dev), parts_(dev, seq, d_model, heads) {
  using Shape = std::vector<int64_t>;
  PW_CHECK(params_.size() == 4 && params_[0].shape() == (Shape{3 * d_model, d_model}) &&
               params_[1].shape() == (Shape{3 * d_model}) && params_[2].shape() == (Shape{d_model, d_model}) &&
               params_[3].shape() == (Shape{d_model}),
           "attention twin parameters are not {w_qkv, b_qkv, w_proj, b_proj}");
}

Tensor CudaAttention::forward(Inputs in, Context& ctx) {
  check_inputs(in);
  return parts_.forward_parts(*in[0], attention_params(), ctx);
}

std::vector<Tensor> CudaAttention::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  std::vector<Tensor> r;
  r.push_back(input_grad_for_b(ctx, CudaAttentionParts::kCount,
                               [&] { return parts_.backward_parts(*in[0], attention_params(), ctx, grad_out); }));
  return r;
}

void CudaAttention::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  input_grad_for_w(ctx, ctx.saved.size() > CudaAttentionParts::kDqkv,
                   [&] { return parts_.backward_parts(*in[0], attention_params(), ctx, grad_out); });
  parts_.weight_parts(*in[0], ctx, grad_out, {&grads_[0], &grads_[1], &grads_[2], &grads_[3]});
}

}  // namespace pw::exec::cuda
