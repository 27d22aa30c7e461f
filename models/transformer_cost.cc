#include "models/transformer_cost.h"

#include "models/device_file.h"
#include "models/error.h"

namespace pw::models {
namespace {

// Parameters of the block on one device of the tensor-parallel group.
double block_parameters(const BlockShape& b) {
  const double h = b.d_model, f = b.mlp ? b.ffn : 0;
  const double attention = 4 * h * h + 4 * h;
  const double rest = b.mlp ? 2 * h * f + f + 5 * h : 0;  // MLP weights and biases, two layer norms
  return (attention + rest) / b.tp;
}

}  // namespace

PassGemms block_gemms(const BlockShape& b) {
  const double tokens = b.batch * b.seq, h = b.d_model, t = b.tp, d = h / b.heads, heads = b.batch * b.heads / t;
  PassGemms g;
  add_weight_product(g, {tokens, 3 * h / t, h});  // Q, K, V
  add_weight_product(g, {tokens, h, h / t});      // output projection
  if (b.mlp) {
    add_weight_product(g, {tokens, b.ffn / t, h});
    add_weight_product(g, {tokens, h, b.ffn / t});
  }
  g.fwd.push_back({b.seq, b.seq, d, heads});      // Q K^T per head
  g.fwd.push_back({b.seq, d, b.seq, heads});      // P V
  g.bin.push_back({b.seq, d, b.seq, 3 * heads});  // dQ, dK, dV
  g.bin.push_back({b.seq, b.seq, d, heads});      // dP
  return g;
}

PassSeconds block_kernel_bytes(const BlockShape& b, const BlockKernels& k, int element_bytes) {
  const double e = element_bytes, tokens = b.batch * b.seq;
  const double sbh = tokens * b.d_model / (b.sequence_parallel ? b.tp : 1);
  const double mlp = b.mlp ? tokens * b.ffn / b.tp : 0;
  const double scores = b.batch * b.heads / b.tp * b.seq * b.seq;
  const double drop = k.dropout ? 1 : 0;
  PassSeconds bytes;
  // Attention: masked softmax and, with dropout, attention dropout over the scores.
  bytes.f = (2 * e + drop * (2 * e + 1)) * scores;
  bytes.b = (3 * e + drop * (2 * e + 1)) * scores;
  if (b.mlp) {
    const double residual_fwd = k.dropout ? 3 * e + 1 : 3 * e;
    bytes.f += (2 * 2 * e + 2 * residual_fwd) * sbh + 2 * e * mlp;
    bytes.b += (2 * 3 * e + 2 * 3 * e + drop * 2 * (2 * e + 1)) * sbh + 3 * e * mlp;
  }
  if (k.fp32_grad_accumulation) bytes.w = (e + 4 + 4) * block_parameters(b);
  return bytes;
}

PassSeconds block_launches(const BlockShape& b, const BlockKernels& k) {
  const PassGemms g = block_gemms(b);
  // Forward: softmax; with the MLP two layer norms, GELU and two residual adds; dropout adds
  // one kernel per dropout site (two with the MLP, one without). Backward likewise; W: the
  // weight products, and the fp32 accumulation pass when there is one.
  const double kernels = (b.mlp ? 6 : 1) + (k.dropout ? (b.mlp ? 3 : 1) : 0);
  return {double(g.fwd.size()) + kernels, double(g.bin.size()) + kernels,
          double(g.bw.size()) + (k.fp32_grad_accumulation ? 1 : 0)};
}

PassSeconds block_seconds(const DeviceSpec& device, const BlockShape& b, const BlockKernels& k, int element_bytes) {
  PW_CHECK(has_gemm_curve(device, element_bytes == 2), "block_seconds needs a device with a GEMM curve");
  const PassGemms g = block_gemms(b);
  const PassSeconds bytes = block_kernel_bytes(b, k, element_bytes);
  const double bw = achieved_memory_bandwidth(device), launch = launch_seconds(device);
  const PassSeconds n = launch > 0 ? block_launches(b, k) : PassSeconds{};
  return {total_gemm_seconds(device, g.fwd, element_bytes) + bytes.f / bw + n.f * launch,
          total_gemm_seconds(device, g.bin, element_bytes) + bytes.b / bw + n.b * launch,
          total_gemm_seconds(device, g.bw, element_bytes) + bytes.w / bw + n.w * launch};
}

}  // namespace pw::models
