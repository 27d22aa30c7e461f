// The CUDA CNN layer kinds (private to exec/cuda/; built by make_cuda_layer), each following
// the CPU layer of the same kind (exec/layers/conv.h, pooling.h, batch_norm.h, concat.h) for
// attributes, shapes, formulas and contexts, on the kernels of cnn_kernels.h and the products
// of gemm.h. Everything is queued on the device's compute stream; all sums have a fixed order
// (B and W in either order give the same bits; a recompute is bit-identical).
#pragma once

#include "exec/cuda/cnn_index.h"
#include "exec/cuda/conv_plan.h"
#include "exec/cuda/layers/cuda_layer.h"

namespace pw::exec::cuda {

// conv2d: the explicit GEMM of conv_plan.h over chunks of samples (their column matrices are
// scratch, freed per call). Parameters as the CPU: weight [out_c, in_c / groups, k, k], bias
// [out_c] when bias = 1. Context: nothing (B reads the weight, W the input).
class CudaConv2d : public CudaLayer {
 public:
  CudaConv2d(std::unique_ptr<Layer> twin, CudaDevice& dev, const ConvGeometry& g, bool bias);
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  Window2d window() const;
  ConvGeometry g_;
  bool bias_;
};

// max_pool / avg_pool (average including padding). Max keeps in ctx.saved[0] each output's
// argmax position (h * in_w + w, as a float); avg keeps nothing.
class CudaPool : public CudaLayer {
 public:
  CudaPool(std::unique_ptr<Layer> twin, CudaDevice& dev, bool max, const Window2d& w);
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  bool max_;
  Window2d w_;
};

// batch_norm in training mode with statistics groups (set_statistics_group) and running
// statistics updated once per micro-batch by whichever of B and W runs first. Context as the
// CPU: saved = {mean [groups, c], var [groups, c]}, then after B or W {dx, dgamma|dbeta [2, c]}
// for the other.
class CudaBatchNorm : public CudaLayer {
 public:
  CudaBatchNorm(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t c, int64_t spatial);
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override;
  void set_statistics_group(int64_t samples) override;
  int64_t group_size() const { return group_; }
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }

 private:
  void run_backward(Inputs in, Context& ctx, const Tensor& grad_out);
  int64_t c_, spatial_;
  int64_t group_ = 0;
  Tensor running_mean_, running_var_;
};

// concat along the first per-sample dimension: row copies in and out of the output.
class CudaConcat : public CudaLayer {
 public:
  CudaConcat(std::unique_ptr<Layer> twin, CudaDevice& dev, std::vector<std::vector<int64_t>> in_shapes);
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  std::vector<int64_t> in_elems_;  // per input, elements per sample
  std::vector<int64_t> out_shape_;
  int64_t out_elems_ = 0;
};

}  // namespace pw::exec::cuda
