#include "exec/layers/attention.h"

#include <algorithm>
#include <cmath>

#include "exec/layers/common.h"
#include "exec/layers/softmax_rows.h"
#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

namespace {
// (batch, head) batched views; ld = row stride of the tensor the view reads.
MatView heads_view(int64_t b, int64_t h, int64_t rows, int64_t cols, int64_t ld, int64_t dh) {
  return {{b, h, rows, cols}, {rows * ld, dh, ld, 1}};
}
MatView heads_view_t(int64_t b, int64_t h, int64_t rows, int64_t cols, int64_t ld, int64_t dh) {
  // logical [rows, cols] read from a [cols, rows] slice with row stride ld (a transposed view)
  return {{b, h, rows, cols}, {cols * ld, dh, 1, ld}};
}
MatView square(int64_t b, int64_t h, int64_t s) { return {{b, h, s, s}, {h * s * s, s * s, s, 1}}; }
MatView square_t(int64_t b, int64_t h, int64_t s) { return {{b, h, s, s}, {h * s * s, s * s, 1, s}}; }

models::LayerSpec sub_spec(const models::LayerSpec& parent, const std::string& part, std::vector<int64_t> out_shape) {
  models::LayerSpec s;
  s.name = parent.name + "." + part;
  s.kind = models::LayerKind::linear;
  s.output_shape = std::move(out_shape);
  return s;
}
}  // namespace

AttentionCore::AttentionCore(int64_t seq, int64_t d_model, int64_t heads)
    : seq_(seq), d_(d_model), heads_(heads), dh_(heads > 0 ? d_model / heads : 0) {
  if (seq < 1 || d_model < 1 || heads < 1 || d_model % heads != 0)
    throw InputError("attention: d_model " + std::to_string(d_model) + " must be a positive multiple of heads " +
                     std::to_string(heads));
}

Tensor AttentionCore::forward(const Tensor& qkv, Context& ctx) {
  const int64_t b = qkv.dim(0), s = seq_, h = heads_, dh = dh_, ld = 3 * d_;
  Tensor probs({b, h, s, s});
  const float* q = qkv.data();
  scores_.run(heads_view(b, h, s, dh, ld, dh), q, heads_view_t(b, h, dh, s, ld, dh), q + d_, square(b, h, s),
              probs.data());
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  float* p = probs.data();
  parallel_for(
      b * h * s,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t i = r % s;
          float* row = p + r * s;
          softmax_row(row, i + 1, scale);
          std::fill(row + i + 1, row + s, 0.0f);
        }
      },
      16);
  Tensor out({b, s, d_});
  mix_.run(square(b, h, s), p, heads_view(b, h, s, dh, ld, dh), q + 2 * d_, heads_view(b, h, s, dh, d_, dh),
           out.data());
  ctx.saved.push_back(std::move(probs));
  return out;
}

Tensor AttentionCore::backward(const Tensor& qkv, const Context& ctx, const Tensor& grad_out) {
  const int64_t b = qkv.dim(0), s = seq_, h = heads_, dh = dh_, ld = 3 * d_;
  const Tensor& probs = ctx.saved.at(0);
  const float* q = qkv.data();
  const float* dout = grad_out.data();
  Tensor dqkv(qkv.shape());
  float* dq = dqkv.data();
  // dV = Pᵀ · dO
  d_v_.run(square_t(b, h, s), probs.data(), heads_view(b, h, s, dh, d_, dh), dout, heads_view(b, h, s, dh, ld, dh),
           dq + 2 * d_);
  // dP = dO · Vᵀ
  Tensor ds({b, h, s, s});
  d_probs_.run(heads_view(b, h, s, dh, d_, dh), dout, heads_view_t(b, h, dh, s, ld, dh), q + 2 * d_, square(b, h, s),
               ds.data());
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const float* p = probs.data();
  float* d = ds.data();
  parallel_for(
      b * h * s,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t i = r % s;
          float* dr = d + r * s;
          softmax_backward_row(p + r * s, dr, i + 1, scale);
          std::fill(dr + i + 1, dr + s, 0.0f);
        }
      },
      16);
  // dQ = dS · K ; dK = dSᵀ · Q
  d_q_.run(square(b, h, s), d, heads_view(b, h, s, dh, ld, dh), q + d_, heads_view(b, h, s, dh, ld, dh), dq);
  d_k_.run(square_t(b, h, s), d, heads_view(b, h, s, dh, ld, dh), q, heads_view(b, h, s, dh, ld, dh), dq + d_);
  return dqkv;
}

Attention::Attention(models::LayerSpec spec, int64_t seq, int64_t d_model, int64_t heads)
    : Layer(std::move(spec)), seq_(seq), d_(d_model), core_(seq, d_model, heads) {
  qkv_ = std::make_unique<Linear>(sub_spec(spec_, "qkv", {seq, 3 * d_model}), d_model, 3 * d_model, true);
  proj_ = std::make_unique<Linear>(sub_spec(spec_, "proj", {seq, d_model}), d_model, d_model, true);
  qkv_->set_init_std(0.02);
  proj_->set_init_std(0.02);
  register_parameters_of(*qkv_);
  register_parameters_of(*proj_);
}

void Attention::init_parameters(uint64_t seed) {
  qkv_->init_parameters(mix_seed(seed, 1));
  proj_->init_parameters(mix_seed(seed, 2));
}

Tensor Attention::forward_parts(const Tensor& x, Context& ctx) {
  ctx.clear();
  ctx.children.resize(3);
  const Tensor* xin[] = {&x};
  Tensor qkv = qkv_->forward(xin, ctx.children[0]);
  Tensor a = core_.forward(qkv, ctx.children[2]);
  const Tensor* ain[] = {&a};
  Tensor y = proj_->forward(ain, ctx.children[1]);
  ctx.saved.push_back(std::move(qkv));
  ctx.saved.push_back(std::move(a));
  ctx.batch = x.dim(0);
  return y;
}

Tensor Attention::backward_parts(const Tensor& x, Context& ctx, const Tensor& grad_out) {
  const Tensor* ain[] = {&ctx.saved.at(1)};
  Tensor da = std::move(proj_->backward_input(ain, ctx.children[1], grad_out)[0]);
  Tensor dqkv = core_.backward(ctx.saved.at(0), ctx.children[2], da);
  const Tensor* xin[] = {&x};
  Tensor dx = std::move(qkv_->backward_input(xin, ctx.children[0], dqkv)[0]);
  ctx.saved.resize(2);
  ctx.saved.push_back(std::move(dqkv));
  return dx;
}

void Attention::weight_parts(const Tensor& x, Context& ctx, const Tensor& grad_out) {
  PW_CHECK(ctx.saved.size() >= 3, "attention W before its input gradients were computed");
  const Tensor* ain[] = {&ctx.saved.at(1)};
  proj_->backward_weight(ain, ctx.children[1], grad_out);
  const Tensor* xin[] = {&x};
  qkv_->backward_weight(xin, ctx.children[0], ctx.saved.at(2));
}

Tensor Attention::forward(Inputs in, Context& ctx) {
  check_input(*in[0], 0);
  return forward_parts(*in[0], ctx);
}

std::vector<Tensor> Attention::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  std::vector<Tensor> r;  // saved: qkv, a, dqkv (B's), then dx when W ran first
  r.push_back(input_grad_for_b(ctx, 3, [&] { return backward_parts(*in[0], ctx, grad_out); }));
  return r;
}

void Attention::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  input_grad_for_w(ctx, ctx.saved.size() >= 3, [&] { return backward_parts(*in[0], ctx, grad_out); });
  weight_parts(*in[0], ctx, grad_out);
}

}  // namespace pw::exec
