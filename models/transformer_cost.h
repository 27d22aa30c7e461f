// One pre-norm GPT transformer block (or its attention alone) on a device with a GEMM curve:
// its matrix products, its memory-bound kernels, and the seconds of its forward (F), input
// gradient (B) and weight gradient (W) passes. One model behind the analytic profile
// (models/cost.h, kinds transformer_block and attention) and whatif's Megatron-LM model
// (whatif/megatron.h), so that `plan` and `whatif best` price a block alike.
//
// Per device of a t-way tensor-parallel group (t = 1: no split), with b s tokens, head
// dimension d = h/a and a/t local heads:
//   products: QKV (b s, 3h/t, h), projection (b s, h, h/t), MLP (b s, f/t, h) and (b s, h, f/t),
//   each also as its input gradient (B) and weight gradient (W); attention scores (s, s, d) and
//   context (s, d, s), b a/t of each; backward (all B): dQ, dK, dV as (s, d, s) and dP as
//   (s, s, d). Priced by models/gemm_efficiency.h.
//   memory-bound kernels, bytes per element read + written with e bytes an element: forward,
//   two layer norms (2e each) and two residual adds (3e each; with dropout Megatron's fused
//   bias-dropout-add: 3e + a 1-byte mask) over the b s h activations (divided by t with
//   sequence parallelism), the activation (2e: GeLU, fused with its bias in Megatron) over the
//   b s f/t MLP activations, the masked softmax (2e) and, with dropout, attention dropout
//   (2e + 1) over the b a/t s^2 scores; backward, layer norms 3e each (gradient and input
//   read, gradient written), residual gradient sums 3e each plus, with dropout, the
//   dropout-adds 2e + 1 each, the activation 3e, softmax 3e and attention dropout 2e + 1. With
//   fp32 gradient accumulation (Megatron-LM) W adds each micro-batch's e-byte weight gradient
//   into an fp32 buffer (e + 4 read, 4 written per parameter of the device). The attention
//   kind alone has the products and kernels of its attention half only (no layer norms, no
//   residual adds, no MLP).
//   Memory traffic runs at the device's achieved bandwidth (models/device.h), and adds to the
//   products' time: the kernels run one after another, none overlaps another.
// All functions are pure and thread-safe.
#pragma once

#include <vector>

#include "models/device.h"
#include "models/gemm_efficiency.h"

namespace pw::models {

struct BlockShape {
  double batch = 1;  // samples of the micro-batch (b)
  double seq = 0, d_model = 0, heads = 0;
  double ffn = 0;  // MLP width f (4h in GPT); with mlp false unused
  double tp = 1;   // tensor-parallel ways t (divides heads, d_model and ffn)
  bool sequence_parallel = false;
  bool mlp = true;  // false: the attention kind alone
};

// Which memory-bound kernels the block runs (see above). Pipewright's executor runs neither;
// Megatron-LM's GPT of SC'21 runs both (dropout 0.1 on the hidden states and the attention
// probabilities, gradients accumulated in fp32).
struct BlockKernels {
  bool dropout = false;
  bool fp32_grad_accumulation = false;
};
inline constexpr BlockKernels kMegatronKernels{true, true};

PassGemms block_gemms(const BlockShape& b);

struct PassSeconds {
  double f = 0, b = 0, w = 0;
};
// Bytes of the memory-bound kernels per pass (f, b, w), as above.
PassSeconds block_kernel_bytes(const BlockShape& b, const BlockKernels& k, int element_bytes);
// Kernel launches per pass (f, b, w): the products plus the memory-bound kernels above.
PassSeconds block_launches(const BlockShape& b, const BlockKernels& k);
// Seconds per pass: the products on the device's GEMM curve plus the kernels' bytes at the
// achieved memory bandwidth, plus block_launches x the device's measured launch time (0 for
// catalog entries, models/device_file.h). Requires has_gemm_curve(device, element_bytes == 2) (checked).
PassSeconds block_seconds(const DeviceSpec& device, const BlockShape& b, const BlockKernels& k, int element_bytes);

}  // namespace pw::models
