#include "models/defaults.h"

#include "models/error.h"

namespace pw::models {

std::string default_dtype(const DeviceSpec& device) {
  return device.peak_bf16_flops > device.peak_fp32_flops && device.name.rfind("cpu", 0) != 0 ? "bf16" : "fp32";
}

bool parse_dtype(const std::string& dtype, const std::string& flag) {
  if (dtype == "fp32") return false;
  if (dtype == "bf16") return true;
  throw InputError(flag + ": expected fp32 or bf16, got \"" + dtype + "\"");
}

bool resolve_bf16(bool bf16_flag, const std::string& dtype, const DeviceSpec& device) {
  if (bf16_flag && !dtype.empty() && dtype != "bf16")
    throw InputError("--bf16 and --dtype " + dtype + ": give one of them");
  if (bf16_flag) return true;
  return parse_dtype(dtype.empty() ? default_dtype(device) : dtype, "--dtype");
}

std::string priced_optimizer(const std::string& optimizer, bool bf16) {
  return bf16 && optimizer == "adam" ? "adam-mixed" : optimizer;
}

Cluster make_node_cluster(const DeviceSpec& device, int devices, int devices_per_node, const LinkSpec& intra,
                          const LinkSpec& inter) {
  if (devices < 1) throw InputError("--devices: expected at least 1 device, got " + std::to_string(devices));
  if (devices_per_node < 1)
    throw InputError("--devices-per-node: expected at least 1, got " + std::to_string(devices_per_node));
  const std::string name = std::to_string(devices) + "x" + device.name;
  if (devices <= devices_per_node)
    return Cluster(name, device, {{"node", devices, intra.bandwidth_bytes_per_s, intra.latency_ns}});
  if (devices % devices_per_node != 0)
    throw InputError("devices: " + std::to_string(devices) + " is not a multiple of devices_per_node = " +
                     std::to_string(devices_per_node));
  return Cluster(name + "-" + inter.name, device,
                 {{"node", devices_per_node, intra.bandwidth_bytes_per_s, intra.latency_ns},
                  {"network", devices / devices_per_node, inter.bandwidth_bytes_per_s, inter.latency_ns}});
}

}  // namespace pw::models
