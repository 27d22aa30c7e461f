// The CUDA layer kinds (private to exec/cuda/; built by make_cuda_layer). Each follows the CPU
// layer of the same kind in exec/layers/ (see there for shapes and formulas); differences are
// noted per class.
#pragma once

#include <array>

#include "exec/cuda/layers/cuda_layer.h"
#include "exec/cuda/layers/parts.h"

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
  void share_weight(Tensor* weight, Tensor* grad) override;

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
  Tensor* token_table() override { return &params_.at(0); }
  Tensor* token_table_grad() override { return &grads_.at(0); }

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

// attention (causal, attrs seq, d_model, heads): CudaAttentionParts over this layer's
// parameters (the CPU Attention's order and shapes). Context: the parts' slots, then dx when W
// runs before B.
class CudaAttention : public CudaLayer {
 public:
  CudaAttention(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t seq, int64_t d_model, int64_t heads);
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  std::array<Tensor*, 4> attention_params() { return {&params_[0], &params_[1], &params_[2], &params_[3]}; }
  CudaAttentionParts parts_;
};

// transformer_block (attrs seq, d_model, heads, ffn), the CPU block's pre-norm formula
//   x1 = x + attention(ln1(x));  y = x1 + fc2(gelu(fc1(ln2(x1))))
// from the CUDA pieces: the layer_norm and GELU kernels, linear_* and CudaAttentionParts.
// Parameters in the CPU block's order: ln1 {g, b}, attention {w_qkv, b_qkv, w_proj, b_proj},
// ln2 {g, b}, fc1 {w, b}, fc2 {w, b}. Context: saved = the Slot tensors below (B appends the
// gradients W needs, and dx when W runs first); children[0] = the attention's context.
class CudaTransformerBlock : public CudaLayer {
 public:
  CudaTransformerBlock(std::unique_ptr<Layer> twin, CudaDevice& dev, int64_t seq, int64_t d_model, int64_t heads,
                       int64_t ffn);
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;

 private:
  // Forward activations (h1 = ln1(x), x1, h2 = ln2(x1), f = fc1(h2), g = gelu(f), the two layer
  // norms' row stats), then what B adds (df, dh2, dx1, dh1) and dx (W before B).
  enum Slot { kH1, kX1, kH2, kF, kG, kStats1, kStats2, kDF, kDH2, kDX1, kDH1, kDX };
  Tensor input_grads(const Tensor& x, Context& ctx, const Tensor& dy);
  std::array<Tensor*, 4> attention_params() { return {&params_[2], &params_[3], &params_[4], &params_[5]}; }
  std::array<Tensor*, 4> attention_grads() { return {&grads_[2], &grads_[3], &grads_[4], &grads_[5]}; }
  int64_t seq_, d_, ffn_;
  CudaAttentionParts attn_;
};

}  // namespace pw::exec::cuda
