// linear (y = x·Wᵀ + b over the last dimension; other dimensions are rows) and lm_head (the
// same without bias, optionally sharing the embedding's token table: attrs tied = 1).
//
// Layout: W is stored [out, in] row-major, which the forward matmul reads as a "ba" (transposed)
// weight — measured ~2x faster than "ab" on the AVX2 EPYC (bench/exec_bench.cc).
#pragma once

#include "exec/dnnl_util.h"
#include "exec/layer.h"

namespace pw::exec {

class Linear : public Layer {
 public:
  Linear(models::LayerSpec spec, int64_t in, int64_t out, bool bias);

  std::vector<std::vector<int64_t>> input_shapes() const override;
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override;

  // Makes this layer read (and accumulate gradients into) another layer's [out, in] weight
  // (weight tying); this layer then reports no parameters of its own.
  void share_weight(Tensor* weight, Tensor* grad) override;
  bool has_weight_grad() override { return true; }
  // Initialization scale of W (normal, this standard deviation); default 1/sqrt(in).
  void set_init_std(double s) { init_std_ = s; }
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

 private:
  int64_t rows(const Tensor& x) const { return x.numel() / in_; }
  int64_t in_, out_;
  bool has_bias_;
  double init_std_;
  Tensor weight_, bias_, grad_weight_, grad_bias_;
  Tensor* w_ = nullptr;
  Tensor* gw_ = nullptr;
  MatmulCache fwd_, bwd_data_, bwd_weight_;
};

}  // namespace pw::exec
