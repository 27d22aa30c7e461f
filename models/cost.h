// Analytic cost model: FLOPs, bytes and roofline times of a model's layers on a catalog device.
//
// FLOPs count a multiply-add as 2. Matmul-type layers (linear, attention, transformer_block,
// lm_head, conv2d) count their matrix products only, the standard convention under which a
// GPT block with f = 4h costs 24*B*s*h^2 + 4*B*s^2*h forward (causal attention counted in
// full) and the LM head 2*B*s*h*V; their backward is 2x forward, split into the input-gradient
// (B) and weight-gradient (W) halves, and the attention score products (no weights) go to B.
// Hence Megatron-LM's 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) = 4 forward-equivalents of the
// blocks (full re-materialization) + 3 of the head. Elementwise layers (norms, activations,
// losses, pooling) count a few FLOPs per element and are in practice memory bound.
//
// Bytes: activations are fp32 (4 bytes per element) unless element_bytes says otherwise;
// token ids are int32. Bytes moved, forward: inputs read, output and stashed intermediates
// written, weights read; backward: output gradient and stash read, input gradient written,
// weights read and weight gradients written. Stash = what the layer's backward needs (its
// input, or a cheaper stand-in: a 1-byte mask for relu, argmax indices for max_pool).
//
// Times are rooflines: max(flops / (peak * efficiency), bytes / memory_bandwidth), rounded to
// integer ns, memory at the device's achieved bandwidth (models/device.h); the backward
// roofline is taken over B and W together and split between them in proportion to their
// FLOPs. With efficiency 0 (the default) on a device whose catalog entry has a GEMM ceiling,
// at the bf16 rate, a matmul-type layer's arithmetic is instead the sum of its own matrix
// products, each priced by its shape at this micro-batch (models/gemm_efficiency.h): linear
// (rows, out, in); lm_head (B s, V, h); conv2d the implicit GEMM (B x output pixels, out_c/g,
// in_c/g x k^2) per group g; every weight product also as its input- and weight-gradient
// product, the backward split in proportion to those times (the roofline of the products and
// the layer's bytes). attention and transformer_block are priced by models/transformer_cost.h
// (Pipewright's kernels): their products plus their memory-bound kernels, F, B and W each.
// Every other layer (memory bound), every device without a ceiling (the CPU entries among
// them) and efficiency 0 at fp32 use the constant kConstantEfficiency (0.5).
// A measured device (`pipewright calibrate`, models/device_file.h) has a curve at each precision
// it measured, fp32 included (its tables price the products), memory at its measured copy
// rate, and its measured launch time added per kernel: one per product, one per forward and
// backward of any other layer, a transformer block's as models/transformer_cost.h counts them.
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/device.h"
#include "models/layer_graph.h"
#include "models/profile.h"

namespace pw::models {

struct LayerCost {
  double forward_flops = 0;
  double backward_input_flops = 0;   // B
  double backward_weight_flops = 0;  // W
  int64_t output_bytes = 0;
  int64_t stash_bytes = 0;
  int64_t parameter_bytes = 0;  // parameters * element_bytes
  int64_t workspace_bytes = 0;  // transient (the attention score matrix before softmax)
  // Held from a split B to its W (zb-h1, zb-h2): the output gradient of a layer with weights of
  // its own, plus the internal gradients a fused layer's W reads (as the executor keeps them).
  int64_t weight_pending_bytes = 0;
  double forward_mem_bytes = 0;  // bytes moved
  double backward_mem_bytes = 0;
};

// Trainable parameters of one layer (batch-norm running statistics are buffers, not counted;
// a layer that shares another's parameters counts 0).
// Throws InputError for a missing or invalid attribute, naming the layer; "opaque" layers
// (imported, no attrs) have no analytic cost and throw.
int64_t layer_parameter_count(const LayerSpec& layer);

// Cost of one layer for a micro-batch of `micro_batch` samples (>= 1). `element_bytes` is the
// size of an activation / weight element (4 fp32, 2 bf16). Checks that the attrs agree with
// output_shape where both describe the same thing (conv, pooling, linear).
LayerCost layer_cost(const LayerSpec& layer, int64_t micro_batch, int element_bytes = 4);

struct CostOptions {
  double efficiency = 0;           // (0, 1]: fraction of peak FLOP/s for every layer (an
                                   // override); 0: the device's GEMM curve (see above)
  bool bf16 = false;               // peak_bf16_flops and 2-byte activations
  std::string optimizer = "adam";  // models/optimizer_memory.h
  // GEMM-size efficiency: a layer with parameters runs at efficiency * r / (r + gemm_half_rows)
  // of peak, r = forward FLOPs / (2 x parameters) = the rows of its matrix products (micro-batch
  // x rows per sample). Small products (a micro-batch of 1 on a CPU) are far from peak. 0 = off
  // (plain roofline).
  double gemm_half_rows = 0;
};

// r / (r + half_rows) as above; 1 when half_rows <= 0 or the layer has no parameters.
double gemm_efficiency(double forward_flops, double parameters, double half_rows);
// The catalog's default: 16 rows for CPU devices (names "cpu..."), 0 (off) otherwise.
double default_gemm_half_rows(const DeviceSpec& device);

// Whether every layer of `model` has an analytic cost (an imported "opaque" layer has none).
bool has_analytic_costs(const Model& model);

// Profile of `model` on `device` at `micro_batch`: source "analytic", device.name = the
// catalog name, edges copied from the model, input layers is_data_loading with zero time.
// parameter_bytes = parameters * weight_bytes of the optimizer; optimizer_bytes =
// parameters * (total - 2 * weight_bytes), i.e. everything beyond the weights and one
// same-size gradient buffer (see models/optimizer_memory.h), so 2 * parameter_bytes +
// optimizer_bytes is the persistent memory of the parameters. Throws InputError for
// micro_batch < 1, efficiency outside [0, 1], an unknown optimizer or an uncostable layer.
Profile analytic_profile(const Model& model, const DeviceSpec& device, int64_t micro_batch,
                         const CostOptions& options = {});

// analytic_profile's memory figures of `model` at `micro_batch` with `optimizer` (a name of
// models/optimizer_memory.h): on a catalog CPU entry, since bytes do not depend on the device
// (its times are not meant to be read). What the executor's up-front memory checks use.
Profile analytic_memory_profile(const Model& model, int64_t micro_batch, const std::string& optimizer);

// analytic_profile at `micro_batch`, plus one point (models/profile_points.h; threads 1) per
// other size in `sizes`, each costed at its own size, so that a planner using profile_at sees
// the efficiency of each micro-batch size (with gemm_half_rows > 0, or a device's GEMM curve)
// instead of linear scaling.
Profile analytic_profile_with_points(const Model& model, const DeviceSpec& device, int64_t micro_batch,
                                     const std::vector<int64_t>& sizes, const CostOptions& options = {});

// Roofline time: max(flops / flops_per_s, bytes / bytes_per_s) seconds; roofline_ns rounds it to
// whole ns (llround(seconds * 1e9); unspecified past int64).
double roofline_seconds(double flops, double bytes, double flops_per_s, double bytes_per_s);
int64_t roofline_ns(double flops, double bytes, double flops_per_s, double bytes_per_s);

// FLOPs of one sample, forward + backward (B + W), over all layers.
double model_flops_per_sample(const Model& model);
double model_forward_flops_per_sample(const Model& model);
int64_t model_parameter_count(const Model& model);

}  // namespace pw::models
