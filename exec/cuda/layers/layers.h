// The CUDA layer kinds (private to exec/cuda/; built by make_cuda_layer). Each follows the CPU
// layer of the same kind in exec/layers/ (see there for shapes and formulas); differences are
// noted per class.
#pragma once

#include "exec/cuda/layers/cuda_layer.h"

namespace pw::exec::cuda {

// linear and lm_head: y = x·Wᵀ (+ b) through cuBLASLt with the bias epilogue; W [out, in].
// W: gW += dyᵀ·x (beta 1), gb += column sums of dy. A tied head reads (and accumulates into)
// the embedding's token table.
class CudaLinear : public CudaLayer {
 public:
  CudaLinear(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t in, int64_t out, bool bias);
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  std::vector<Tensor*> parameters() override;
  std::vector<Tensor*> gradients() override;
  bool has_weight_grad() override { return true; }
  void init_parameters(uint64_t seed) override;
  void share_weight(Tensor* weight, Tensor* grad);

 private:
  int64_t in_, out_;
  bool bias_;
  Tensor* w_;
  Tensor* gw_;
  bool tied_ = false;
};

// relu, gelu (tanh approximation). No context.
class CudaActivation : public CudaLayer {
 public:
  CudaActivation(std::unique_ptr<Layer> twin, CudaDevice& dev, bool gelu)
      : CudaLayer(std::move(twin), dev), gelu_(gelu) {}
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  bool gelu_;
};

// residual_add (two gradients, both copies of dy), input (a copy of the data), flatten.
class CudaPassThrough : public CudaLayer {
 public:
  enum class Kind { input, residual_add, flatten };
  CudaPassThrough(std::unique_ptr<Layer> twin, CudaDevice& dev, Kind kind)
      : CudaLayer(std::move(twin), dev), kind_(kind) {}
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  Kind kind_;
};

// dropout: the CPU's masks (same generator, drawn per element on the device). Context: mask.
class CudaDropout : public CudaLayer {
 public:
  CudaDropout(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t permille)
      : CudaLayer(std::move(twin), dev), permille_(permille) {}
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override { seed_ = seed; }

 private:
  int64_t permille_;
  uint64_t seed_ = 1;
};

// layer_norm over the last dimension. Context: per-row {mean, rstd}.
class CudaLayerNorm : public CudaLayer {
 public:
  CudaLayerNorm(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t dim)
      : CudaLayer(std::move(twin), dev), dim_(dim) {}
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  int64_t dim_;
};

// embedding: token + position tables. An id outside [0, vocab) gives a NaN row (the CPU
// throws InputError; the device cannot, and the trainer's NaN check reports it).
class CudaEmbedding : public CudaLayer {
 public:
  CudaEmbedding(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t vocab, int64_t seq, int64_t d)
      : CudaLayer(std::move(twin), dev), vocab_(vocab), seq_(seq), d_(d) {}
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  Tensor* token_table() { return &params_.at(0); }
  Tensor* token_table_grad() { return &grads_.at(0); }

 private:
  int64_t vocab_, seq_, d_;
};

// softmax_xent, fused: forward keeps per-row {max, log-sum-exp} (not the [rows, classes]
// probabilities); B recomputes the softmax from the input. A target outside [0, classes)
// makes the loss NaN (the CPU throws InputError). mse_loss as the CPU.
class CudaLoss : public CudaLayer {
 public:
  CudaLoss(std::unique_ptr<Layer> twin, CudaDevice& dev, bool xent, int64_t rows, int64_t classes)
      : CudaLayer(std::move(twin), dev), xent_(xent), rows_(rows), classes_(classes) {}
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  bool xent_;
  int64_t rows_, classes_;
};

}  // namespace pw::exec::cuda
