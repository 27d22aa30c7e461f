#include "exec/layers/dropout.h"

#include "exec/layers/common.h"
#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

Dropout::Dropout(models::LayerSpec spec, std::vector<int64_t> in_shape, int64_t permille)
    : Layer(std::move(spec)), in_shape_(std::move(in_shape)), permille_(permille) {
  if (permille < 0 || permille > 999)
    throw InputError("layer \"" + name() + "\": dropout permille " + std::to_string(permille) + " is outside [0, 999]");
}

Tensor Dropout::forward(Inputs in, Context& ctx) {
  ctx.clear();
  const Tensor& x = *in[0];
  check_input(x, 0);
  const int64_t batch = x.dim(0), per = x.numel() / batch;
  const double p = static_cast<double>(permille_) / 1000.0;
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  Tensor mask(x.shape()), y(x.shape());
  const uint64_t step_seed = mix_seed(seed_, static_cast<uint64_t>(ctx.step) + 1);
  const int64_t first = ctx.first_sample;
  parallel_for(
      batch,
      [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          Rng rng(mix_seed(step_seed, static_cast<uint64_t>(first + b) + 1));
          float* m = mask.data() + b * per;
          const float* xp = x.data() + b * per;
          float* yp = y.data() + b * per;
          for (int64_t i = 0; i < per; ++i) {
            m[i] = rng.uniform() < p ? 0.0f : keep;
            yp[i] = xp[i] * m[i];
          }
        }
      },
      1);
  ctx.saved.push_back(std::move(mask));
  ctx.batch = batch;
  return y;
}

std::vector<Tensor> Dropout::backward_input(Inputs in, Context& ctx, const Tensor& grad_out) {
  Tensor dx(grad_out.shape());
  const float* m = ctx.saved.at(0).data();
  const float* g = grad_out.data();
  float* d = dx.data();
  parallel_for(
      dx.numel(),
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) d[i] = g[i] * m[i];
      },
      4096);
  std::vector<Tensor> r;
  r.push_back(std::move(dx));
  return r;
}

}  // namespace pw::exec
