// The defaults every subcommand shares, in one place (each command's --help shows them):
// the catalog device and links an analytic study assumes, the precision, the optimizer, and
// how a count of devices becomes a cluster. `plan`, `whatif` and `cluster` build analytic
// clusters through make_node_cluster, so the same model, devices, precision and optimizer
// give the same iteration time whichever command asks.
#pragma once

#include <string>

#include "models/cluster.h"
#include "models/device.h"

namespace pw::models {

inline constexpr const char* kDefaultDevice = "a100-80g";
inline constexpr int kDefaultDevicesPerNode = 8;
inline constexpr const char* kDefaultIntraNode = "nvlink3";
inline constexpr const char* kDefaultInterconnect = "ib-100g";
inline constexpr const char* kDefaultOptimizer = "adam";
inline constexpr double kDefaultEfficiency = 0.5;

// Precision of analytic costs when none is given: "bf16" on an accelerator of the catalog
// (its 16-bit tensor rate is above its fp32 rate), "fp32" on a CPU device and on a device
// not in the catalog (the executor computes in fp32).
std::string default_dtype(const DeviceSpec& device);
// "fp32" -> false, "bf16" -> true; anything else throws InputError naming `flag`.
bool parse_dtype(const std::string& dtype, const std::string& flag);

// The precision of the --bf16 / --dtype flags: bf16 with --bf16, else --dtype, else
// default_dtype(device). InputError when they disagree or --dtype is unknown.
bool resolve_bf16(bool bf16_flag, const std::string& dtype, const DeviceSpec& device);

// The optimizer whose memory the cost model prices: under bf16, "adam" is mixed-precision
// Adam ("adam-mixed": 16-bit weights, fp32 master weights and moments), as Megatron-LM and
// DeepSpeed train; every other name is returned unchanged.
std::string priced_optimizer(const std::string& optimizer, bool bf16);

// `devices` devices in nodes of `devices_per_node`: one level joined by `intra` when they fit
// in a node, else nodes joined by `inter` (devices must then be a multiple of
// devices_per_node; InputError otherwise). Named "<devices>x<device>[-<inter>]".
Cluster make_node_cluster(const DeviceSpec& device, int devices, int devices_per_node, const LinkSpec& intra,
                          const LinkSpec& inter);

}  // namespace pw::models
