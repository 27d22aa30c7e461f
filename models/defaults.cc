#include "models/defaults.h"

#include "models/cost.h"
#include "models/error.h"
#include "models/gemm_efficiency.h"

namespace pw::models {

std::string default_dtype(const DeviceSpec& device) {
  return device.peak_bf16_flops > device.peak_fp32_flops && device.name.rfind("cpu", 0) != 0 ? "bf16" : "fp32";
}

bool parse_dtype(const std::string& dtype, const std::string& flag) {
  if (dtype == "fp32") return false;
  if (dtype == "bf16") return true;
  throw InputError(flag + ": expected fp32 or bf16, got \"" + dtype + "\"");
}

bool default_bf16(const DeviceSpec& device) { return default_dtype(device) == "bf16"; }

bool resolve_bf16(bool bf16_flag, const std::string& dtype, const DeviceSpec& device) {
  if (bf16_flag && !dtype.empty() && dtype != "bf16")
    throw InputError("--bf16 and --dtype " + dtype + ": give one of them");
  if (bf16_flag) return true;
  return parse_dtype(dtype.empty() ? default_dtype(device) : dtype, "--dtype");
}

std::string priced_optimizer(const std::string& optimizer, bool bf16) {
  return bf16 && optimizer == "adam" ? "adam-mixed" : optimizer;
}

Profile default_analytic_profile(const Model& model, const DeviceSpec& device, int64_t batch, bool bf16,
                                 const std::string& optimizer, double efficiency) {
  CostOptions co{efficiency, bf16, priced_optimizer(optimizer, bf16)};
  co.gemm_half_rows = default_gemm_half_rows(device);
  const bool curve = efficiency == 0 && has_gemm_curve(device, bf16);
  if (co.gemm_half_rows <= 0 && !curve) return analytic_profile(model, device, 1, co);
  // Efficiency depends on the GEMM size: cost every micro-batch size a plan may use.
  std::vector<int64_t> sizes;
  for (int64_t d = 1; d <= batch && sizes.size() < 64; ++d)
    if (batch % d == 0) sizes.push_back(d);
  return analytic_profile_with_points(model, device, 1, sizes, co);
}

Cluster make_node_cluster(const DeviceSpec& device, int devices, int devices_per_node, const LinkSpec& intra,
                          const LinkSpec& inter) {
  if (devices < 1) throw InputError("--devices: expected at least 1 device, got " + std::to_string(devices));
  if (devices_per_node < 1)
    throw InputError("--devices-per-node: expected at least 1, got " + std::to_string(devices_per_node));
  const std::string name = std::to_string(devices) + "x" + device.name;
  if (devices <= devices_per_node)
    return Cluster(name, device, {{"node", devices, achieved_bandwidth(intra), intra.latency_ns}});
  if (devices % devices_per_node != 0)
    throw InputError("devices: " + std::to_string(devices) +
                     " is not a multiple of devices_per_node = " + std::to_string(devices_per_node));
  return Cluster(name + "-" + inter.name, device,
                 {{"node", devices_per_node, achieved_bandwidth(intra), intra.latency_ns},
                  {"network", devices / devices_per_node, achieved_bandwidth(inter), inter.latency_ns}});
}

}  // namespace pw::models
