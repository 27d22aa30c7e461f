// Device and interconnect catalog with published peak numbers.
//
// Peak numbers are vendor datasheet values (dense, no sparsity). `peak_bf16_flops` holds the
// 16-bit tensor rate: bf16 where the device has it, fp16 where it has only fp16 (P100, V100).
// Link bandwidths are per direction. Each entry names its source.
//
// Achieved rates. A datasheet rate is a line rate no transfer reaches: where a published,
// validated measurement says what fraction large transfers achieve, the entry records it
// (DeviceSpec::memory_efficiency, LinkSpec::efficiency, each with its source) and every cost
// model prices memory traffic and transfers at the achieved rate (achieved_memory_bandwidth,
// achieved_bandwidth): the analytic profile, the clusters built from catalog links (so the
// planner and the simulator), and whatif's Megatron model. Entries without such a measurement
// keep 1 (the line rate); the CPU entries among them, whose costs are calibrated separately.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/json_util.h"

namespace pw::models {

struct MeasuredDevice;  // models/device_file.h

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
  // Fraction of memory_bandwidth_bytes_per_s a large stream (>= 100 MB) achieves; 1 = none
  // published (see above).
  double memory_efficiency = 1;
  std::string memory_source;  // the measurement memory_efficiency comes from
  // What `pipewright calibrate` measured on this device (models/device_file.h): its tables
  // price matrix products instead of gemm_ceiling; null for catalog entries.
  std::shared_ptr<const MeasuredDevice> measured;
};

struct LinkSpec {
  std::string name;
  double bandwidth_bytes_per_s = 0;  // per direction
  int64_t latency_ns = 0;
  std::string source;
  // Fraction of bandwidth_bytes_per_s that large transfers and ring collectives achieve; 1 =
  // none published (see above).
  double efficiency = 1;
  std::string efficiency_source;
};

// memory_bandwidth_bytes_per_s x memory_efficiency.
double achieved_memory_bandwidth(const DeviceSpec& d);
// bandwidth_bytes_per_s x efficiency.
double achieved_bandwidth(const LinkSpec& l);

const std::vector<DeviceSpec>& device_catalog();
const std::vector<LinkSpec>& link_catalog();
// Throws InputError("unknown device kind \"x\" (known: ...)").
const DeviceSpec& find_device(std::string_view name);
const LinkSpec& find_link(std::string_view name);

// A measured device is written as its device file (so a written-out cluster keeps its tables).
void to_json(Json& j, const DeviceSpec& d);
// A catalog name, a device file (models/device_file.h: "format": "pipewright.device/1"), or {"name", "peak_fp32_flops",
// ["peak_bf16_flops"], "memory_bandwidth_bytes_per_s", "memory_bytes"}; rates >= 0 (0: unknown, for a profile's own
// device), memory >= 1 byte. An object that names a catalog device and repeats its peak and bandwidth keeps the
// catalog's gemm_ceiling and memory_efficiency (a written-out cluster reads back with the same costs); any other has
// neither.
DeviceSpec device_from_json(const Json& j, const std::string& path);

}  // namespace pw::models
