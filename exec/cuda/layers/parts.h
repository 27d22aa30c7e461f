// Pieces the CUDA layers are made of, shared by the single layers (layers.h) and the composites
// built from them (attention, transformer_block), so each product and kernel call exists once.
// Parameters are passed per call and read at call time (weight versions, exec/layer.h).
// Everything is queued on the device's compute stream; nothing waits for the device.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "exec/cuda/attention_gemms.h"
#include "exec/cuda/cuda_device.h"
#include "exec/layer.h"

namespace pw::exec::cuda {

// linear over rows: y[rows, out] = x[rows, in]·wᵀ (+ bias), w stored [out, in]; bias may be null.
void linear_forward(CudaDevice& dev, const float* x, const float* w, const float* bias, float* y, int64_t rows,
                    int64_t in, int64_t out);
// dx[rows, in] = dy[rows, out]·w.
void linear_backward_input(CudaDevice& dev, const float* dy, const float* w, float* dx, int64_t rows, int64_t in,
                           int64_t out);
// Scratch of n floats on dev for kernels queued on its compute stream (empty when n is 0): the
// caching allocator reuses it only behind them (exec/cuda/caching_allocator.h).
Tensor device_scratch(CudaDevice& dev, int64_t n);
// grad_g[d] += sum over rows of dy·xhat, grad_b[d] += sum of dy (layer norm's W; stats as its
// forward saved them).
void layer_norm_weight(CudaDevice& dev, const float* x, const float* dy, const float* stats, float* grad_g,
                       float* grad_b, int64_t rows, int64_t d);
// gw[out, in] += dyᵀ·x; gbias[out] += column sums of dy (skipped when gbias is null).
void linear_backward_weight(CudaDevice& dev, const float* x, const float* dy, float* gw, float* gbias, int64_t rows,
                            int64_t in, int64_t out);

// Causal multi-head self-attention, as exec/layers/attention.h: x -> qkv linear (bias) -> core
// -> out-projection linear (bias). The core: the products of attention_gemms (strided views of
// qkv, no copies) and the causal softmax kernels; 1 / sqrt(dh) scaling.
//
// Parameters, in the CPU Attention's order: {w_qkv [3D, D], b_qkv [3D], w_proj [D, D],
// b_proj [D]}; gradients the same. Context (filled by forward_parts, cleared first):
// saved = {qkv, a (core output), probs [B, H, S, S]}; backward_parts appends d_qkv, which
// weight_parts reads, so B (backward_parts) runs before W (weight_parts) within one micro-batch.
class CudaAttentionParts {
 public:
  enum Slot { kQkv, kA, kProbs, kDqkv, kCount };
  using Params = std::array<Tensor*, 4>;
  // Throws InputError unless d_model is a positive multiple of heads.
  CudaAttentionParts(CudaDevice& dev, int64_t seq, int64_t d_model, int64_t heads);
  // x [B, S, D] -> y [B, S, D].
  Tensor forward_parts(const Tensor& x, const Params& params, Context& ctx);
  // dy [B, S, D] -> dx [B, S, D]; keeps d_qkv in ctx.
  Tensor backward_parts(const Tensor& x, const Params& params, Context& ctx, const Tensor& dy);
  // Accumulates the parameter gradients (needs backward_parts first).
  void weight_parts(const Tensor& x, Context& ctx, const Tensor& dy, const Params& grads);

 private:
  Tensor make(std::vector<int64_t> shape) { return Tensor(std::move(shape), dev_.memory()); }
  CudaDevice& dev_;
  int64_t seq_, d_, heads_;
  float scale_;
};

}  // namespace pw::exec::cuda
