#include "exec/layers/losses.h"

#include <cmath>

#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

SoftmaxXent::SoftmaxXent(models::LayerSpec spec, std::vector<int64_t> in_shape, int64_t rows, int64_t classes)
    : Layer(std::move(spec)), in_shape_(std::move(in_shape)), rows_(rows), classes_(classes) {
  int64_t n = 1;
  for (int64_t d : in_shape_) n *= d;
  if (rows_ < 1 || classes_ < 1 || in_shape_.empty() || in_shape_.back() != classes_ || n != rows_ * classes_)
    throw InputError("layer \"" + name() + "\": softmax_xent with rows " + std::to_string(rows_) + " and classes " +
                     std::to_string(classes_) + " does not match its input's per-sample shape");
}

Tensor SoftmaxXent::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  const Tensor& t = *in[1];
  check_input(x, 0);
  if (t.numel() != x.dim(0) * rows_)
    throw InputError("layer \"" + name() + "\": targets " + t.shape_string() + " do not match " +
                     std::to_string(x.dim(0)) + "x" + std::to_string(rows_) + " rows");
  const int64_t n = x.dim(0) * rows_, c = classes_;
  Tensor probs({n, c});
  std::vector<double> row_loss(n);
  const float* xp = x.data();
  const float* tp = t.data();
  float* pp = probs.data();
  parallel_for(
      n,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const float* xr = xp + r * c;
          float* pr = pp + r * c;
          float mx = xr[0];
          for (int64_t i = 1; i < c; ++i) mx = std::max(mx, xr[i]);
          double sum = 0;
          for (int64_t i = 0; i < c; ++i) {
            pr[i] = std::exp(xr[i] - mx);
            sum += pr[i];
          }
          const float inv = static_cast<float>(1.0 / sum);
          for (int64_t i = 0; i < c; ++i) pr[i] *= inv;
          const float tv = tp[r];
          const int64_t k = static_cast<int64_t>(tv);
          if (!(tv >= 0.0f) || static_cast<float>(k) != tv || k >= c)
            throw InputError("layer \"" + name() + "\": target " + std::to_string(tv) + " is not a class id in [0, " +
                             std::to_string(c) + ")");
          row_loss[r] = -(static_cast<double>(xr[k]) - mx - std::log(sum));
        }
      },
      4);
  double total = 0;
  for (double l : row_loss) total += l;
  Tensor loss({1});
  loss.data()[0] = static_cast<float>(total / static_cast<double>(n));
  ctx.saved.push_back(std::move(probs));
  ctx.batch = x.dim(0);
  return loss;
}

std::vector<Tensor> SoftmaxXent::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const float* tp = in[1]->data();
  const int64_t n = x.dim(0) * rows_, c = classes_;
  const float scale = grad_out.data()[0] / static_cast<float>(n);
  Tensor dx(x.shape());
  const float* pp = ctx.saved.at(0).data();
  float* d = dx.data();
  parallel_for(
      n,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t i = 0; i < c; ++i) d[r * c + i] = pp[r * c + i] * scale;
          d[r * c + static_cast<int64_t>(tp[r])] -= scale;
        }
      },
      4);
  std::vector<Tensor> res;
  res.push_back(std::move(dx));
  res.emplace_back();
  return res;
}

Tensor MseLoss::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  const Tensor& t = *in[1];
  check_input(x, 0);
  if (t.shape() != x.shape())
    throw InputError("layer \"" + name() + "\": targets " + t.shape_string() + " do not match the prediction " +
                     x.shape_string());
  double sum = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double e = static_cast<double>(x.data()[i]) - t.data()[i];
    sum += e * e;
  }
  Tensor loss({1});
  loss.data()[0] = static_cast<float>(sum / static_cast<double>(x.numel()));
  ctx.batch = x.dim(0);
  return loss;
}

std::vector<Tensor> MseLoss::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  const Tensor& x = *in[0];
  const Tensor& t = *in[1];
  const float scale = 2.0f * grad_out.data()[0] / static_cast<float>(x.numel());
  Tensor dx(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) dx.data()[i] = scale * (x.data()[i] - t.data()[i]);
  std::vector<Tensor> res;
  res.push_back(std::move(dx));
  res.emplace_back();
  return res;
}

}  // namespace pw::exec
