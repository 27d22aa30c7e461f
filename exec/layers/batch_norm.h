// batch_norm (attrs c; input [batch, c, h, w] or [batch, c]) in training mode on oneDNN's
// batch-normalization primitives: y = gamma * (x - mean) / sqrt(var + eps) + beta with the
// biased mean and variance of the micro-batch, per channel (eps = 1e-5).
//
// Statistics groups ("ghost batches"): with group_size g > 0 the statistics are taken over
// consecutive groups of g samples of the batch (the last group may be smaller); 0 = the whole
// batch. A pipeline sets nothing (each micro-batch is one group, as GPipe does); a one-device
// reference over a whole mini-batch sets g = the pipeline's micro-batch size to reproduce it.
//
// Running statistics (running_mean / running_var, momentum 0.1, unbiased variance as PyTorch)
// are per layer, hence per stage; they are buffers, not parameters. They are updated once per
// micro-batch, by whichever of B or W runs first (a recomputed forward does not update them
// twice). Context: the per-group mean and variance; after B or W, the other's result.
// Parameters: gamma (init 1), beta (init 0).
#pragma once

#include <map>
#include <memory>

#include "exec/layer.h"

namespace pw::exec {

class BatchNorm : public Layer {
 public:
  BatchNorm(models::LayerSpec spec, std::vector<int64_t> in_shape);
  ~BatchNorm() override;
  std::vector<std::vector<int64_t>> input_shapes() const override { return {in_shape_}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override;

  void set_group_size(int64_t g) { group_ = g; }
  void set_statistics_group(int64_t samples) override { set_group_size(samples); }
  int64_t group_size() const { return group_; }
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }

  static constexpr float kEps = 1e-5f;
  static constexpr float kMomentum = 0.1f;

 private:
  struct Prims;
  Prims& prims(int64_t batch);
  // Runs the backward primitive over every group: ctx.saved gets [2] = dx, [3] = dgamma|dbeta.
  void run_backward(Inputs in, Context& ctx, const Tensor& grad_out);
  std::vector<int64_t> in_shape_;
  int64_t c_, spatial_;
  int64_t group_ = 0;
  Tensor gamma_, beta_, grad_gamma_, grad_beta_, running_mean_, running_var_;
  std::map<int64_t, std::unique_ptr<Prims>> cache_;
};

}  // namespace pw::exec
