#include "exec/layers/linear.h"

#include <cmath>

#include "exec/layers/common.h"
#include "models/error.h"

namespace pw::exec {

Linear::Linear(models::LayerSpec spec, int64_t in, int64_t out, bool bias)
    : Layer(std::move(spec)), in_(in), out_(out), has_bias_(bias), init_std_(1.0 / std::sqrt(double(in))) {
  if (in < 1 || out < 1) throw InputError("layer \"" + name() + "\": linear sizes must be >= 1");
  weight_ = Tensor::zeros({out, in});
  grad_weight_ = Tensor::zeros({out, in});
  w_ = &weight_;
  gw_ = &grad_weight_;
  if (has_bias_) {
    bias_ = Tensor::zeros({out});
    grad_bias_ = Tensor::zeros({out});
  }
  register_parameter(&weight_, &grad_weight_);
  if (has_bias_) register_parameter(&bias_, &grad_bias_);
}

std::vector<std::vector<int64_t>> Linear::input_shapes() const {
  std::vector<int64_t> s = spec_.output_shape;
  if (s.empty()) s.push_back(in_);
  s.back() = in_;
  return {s};
}

Tensor Linear::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  std::vector<int64_t> shape = x.shape();
  shape.back() = out_;
  Tensor y(shape);
  const int64_t m = rows(x);
  fwd_.run(row_major(m, in_), x.data(), col_major(in_, out_), w_->data(), row_major(m, out_), y.data(),
           has_bias_ ? bias_.data() : nullptr);
  ctx.batch = x.dim(0);
  return y;
}

std::vector<Tensor> Linear::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  Tensor dx(x.shape());
  const int64_t m = rows(x);
  bwd_data_.run(row_major(m, out_), grad_out.data(), row_major(out_, in_), w_->data(), row_major(m, in_), dx.data());
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

void Linear::backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const int64_t m = rows(x);
  bwd_weight_.run(col_major(out_, m), grad_out.data(), row_major(m, in_), x.data(), row_major(out_, in_), gw_->data(),
                  nullptr, /*accumulate=*/true);
  if (has_bias_) add_column_sums(grad_out.data(), m, out_, grad_bias_.data());
}

void Linear::init_parameters(uint64_t seed) {
  Rng rng(seed);
  fill_normal(weight_, rng, init_std_);
  if (has_bias_) bias_.fill(0.0f);
}

void Linear::share_weight(Tensor* weight, Tensor* grad) {
  PW_CHECK(weight->shape() == (std::vector<int64_t>{out_, in_}), "tied weight shape mismatch");
  w_ = weight;
  gw_ = grad;
  weight_ = Tensor();
  grad_weight_ = Tensor();
  clear_parameters();  // the weight is the other layer's now
  if (has_bias_) register_parameter(&bias_, &grad_bias_);
}

}  // namespace pw::exec
