// The defaults every subcommand shares, in one place (each command's --help shows them):
// the catalog device and links an analytic study assumes, the precision, the optimizer, the
// efficiency, re-materialization, and how a count of devices becomes a cluster. `plan`,
// `simulate --plan`, `whatif throughput|best|max-model|sweep` and `cluster` take their cost
// defaults from here and build analytic clusters through make_node_cluster, so one question
// (model, devices, layout) gets one iteration time whichever command asks (issue 39;
// tests/whatif/one_answer_test.cc holds them to 1%). Links are full duplex everywhere
// (sim/network.h): activations and gradients between two stages pass at once.
#pragma once

#include <string>

#include "models/cluster.h"
#include "models/device.h"
#include "models/layer_graph.h"
#include "models/profile.h"

namespace pw::models {

inline constexpr const char* kDefaultDevice = "a100-80g";
inline constexpr int kDefaultDevicesPerNode = 8;
inline constexpr const char* kDefaultIntraNode = "nvlink3";
inline constexpr const char* kDefaultInterconnect = "ib-100g";
// One optimizer vocabulary: "adam" is the default everywhere and under bf16 is priced as
// mixed-precision Adam (priced_optimizer); "adam-mixed" stays accepted as its explicit name.
inline constexpr const char* kDefaultOptimizer = "adam";
// Fraction of the device's peak FLOP/s the matrix products reach (cost model, planner, whatif's
// Megatron model alike). The default 0 prices each product by its shape on the device's GEMM
// curve (models/gemm_efficiency.h; a transformer block with its memory-bound kernels,
// models/transformer_cost.h) where the catalog has one at the costs' precision (A100, H100,
// H200 at bf16), and at kConstantEfficiency elsewhere (CPUs, TPUs, V100, P100, fp32). A value in
// (0, 1] (--efficiency) is an override: every product at that constant fraction.
inline constexpr double kDefaultEfficiency = 0;
inline constexpr double kConstantEfficiency = 0.5;
// Re-materialization: "auto" recomputes a stage only where its memory requires it (the
// planner's choice per stage); "on" every stage, "off" none.
inline constexpr const char* kDefaultRecompute = "auto";
// `whatif max-model` only: "on". At its answer memory binds and "auto" finds the same largest
// model, but searching recompute per stage at every probe made the default study (1, 8, 64
// devices) take over 13 minutes instead of 4 s.
inline constexpr const char* kMaxModelRecompute = "on";

// Precision of analytic costs when none is given: "bf16" on an accelerator of the catalog
// (its 16-bit tensor rate is above its fp32 rate), "fp32" on a CPU device and on a device
// not in the catalog (the executor computes in fp32).
std::string default_dtype(const DeviceSpec& device);
// "fp32" -> false, "bf16" -> true; anything else throws InputError naming `flag`.
bool parse_dtype(const std::string& dtype, const std::string& flag);
// default_dtype(device) == "bf16".
bool default_bf16(const DeviceSpec& device);

// The precision of the --bf16 / --dtype flags: bf16 with --bf16, else --dtype, else
// default_dtype(device). InputError when they disagree or --dtype is unknown.
bool resolve_bf16(bool bf16_flag, const std::string& dtype, const DeviceSpec& device);

// The optimizer whose memory the cost model prices: under bf16, "adam" is mixed-precision
// Adam ("adam-mixed": 16-bit weights, fp32 master weights and moments), as Megatron-LM and
// DeepSpeed train; every other name is returned unchanged.
std::string priced_optimizer(const std::string& optimizer, bool bf16);

// The analytic profile of `model` on `device` that `plan --model`, `whatif` and the tests
// price with: micro-batch 1, `efficiency`, `bf16`, the optimizer as priced
// (priced_optimizer), GEMM-size efficiency as default_gemm_half_rows(device) says and, where
// that is on (CPU devices) or the costs follow the device's GEMM curve (efficiency 0), one more
// point per divisor of `batch` (the 64 smallest) so that the planner sees each micro-batch
// size's own efficiency. InputError as analytic_profile.
Profile default_analytic_profile(const Model& model, const DeviceSpec& device, int64_t batch, bool bf16,
                                 const std::string& optimizer, double efficiency = kDefaultEfficiency);

// `devices` devices in nodes of `devices_per_node`: one level joined by `intra` when they fit
// in a node, else nodes joined by `inter` (devices must then be a multiple of
// devices_per_node; InputError otherwise). Named "<devices>x<device>[-<inter>]".
Cluster make_node_cluster(const DeviceSpec& device, int devices, int devices_per_node, const LinkSpec& intra,
                          const LinkSpec& inter);

}  // namespace pw::models
