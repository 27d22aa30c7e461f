// Device and interconnect catalog with published peak numbers.
//
// Peak numbers are vendor datasheet values (dense, no sparsity). `peak_bf16_flops` holds the
// 16-bit tensor rate: bf16 where the device has it, fp16 where it has only fp16 (P100, V100).
// Link bandwidths are per direction. Each entry names its source.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/json_util.h"

namespace pw::models {

struct DeviceSpec {
  std::string name;
  double peak_fp32_flops = 0;  // FLOP/s
  double peak_bf16_flops = 0;  // FLOP/s (fp16 where no bf16)
  double memory_bandwidth_bytes_per_s = 0;
  int64_t memory_bytes = 0;
  std::string source;  // where the numbers come from
  // Largest fraction of peak_bf16_flops a 16-bit matrix product was measured to reach on this
  // device (models/gemm_efficiency.h); 0 = no published measurement: the cost model keeps its
  // constant efficiency for this device.
  double gemm_ceiling = 0;
  std::string gemm_source;  // the measurement gemm_ceiling comes from
  int gemm_units = 0;       // streaming multiprocessors (tile waves); 0 = not modelled
};

struct LinkSpec {
  std::string name;
  double bandwidth_bytes_per_s = 0;  // per direction
  int64_t latency_ns = 0;
  std::string source;
};

const std::vector<DeviceSpec>& device_catalog();
const std::vector<LinkSpec>& link_catalog();
// Throws InputError("unknown device kind \"x\" (known: ...)").
const DeviceSpec& find_device(std::string_view name);
const LinkSpec& find_link(std::string_view name);

void to_json(Json& j, const DeviceSpec& d);
// A catalog name or {"name", "peak_fp32_flops", ["peak_bf16_flops"], "memory_bandwidth_bytes_per_s",
// "memory_bytes"}; rates >= 0 (0: unknown, for a profile's own device), memory >= 1 byte. An
// object that names a catalog device and repeats its peak and bandwidth keeps the catalog's
// gemm_ceiling (a written-out cluster reads back with the same costs); any other has none.
DeviceSpec device_from_json(const Json& j, const std::string& path);

}  // namespace pw::models
