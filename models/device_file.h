// A measured device: the `pipewright.device/1` file `pipewright calibrate` writes, and the
// DeviceSpec the cost model reads from it.
//
// File (JSON, every number finite and >= 0; times in seconds, rates in per second):
//   {"format": "pipewright.device/1",
//    "name": "h100-measured",              the DeviceSpec's name
//    "base": "h100-80g",                   optional catalog entry: datasheet peaks, memory size
//    "peak_fp32_flops", "peak_bf16_flops", "memory_bandwidth_bytes_per_s", "memory_bytes":
//                                           optional overrides of the base (required without one,
//                                           except the peaks: then the best measured rates)
//    "provenance": {"card", "driver", "runtime", "date", "command", "host"}   (strings)
//    "copy_bytes_per_s": 3.0e12,           a large device copy, bytes read + written per second
//    "launch_seconds": 4e-6,               one empty kernel (or primitive) launch
//    "gemm": {"sizes": [64, 256, ...], "fp32": [...], "tf32": [...], "bf16": [...]}
//                                           models/gemm_table.h, one list per precision measured
//    "layers": [{"kind", "shape", "forward_s", "backward_input_s", "backward_weight_s"}]}
//                                           the zoo's layer kinds at representative sizes
//
// The DeviceSpec: peaks, memory size and line bandwidth from the base (or the file);
// memory_efficiency = copy_bytes_per_s / line bandwidth (at most 1: a line rate below the
// measured copy is raised to it); `measured` holds the tables, so models/gemm_efficiency.h
// prices each precision measured by its table (models/cost.h adds launch_seconds per kernel).
// Without a base, a measured copy is the line rate.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "models/device.h"
#include "models/gemm_table.h"
#include "models/json_util.h"

namespace pw::models {

struct MeasuredLayer {
  std::string kind;   // a layer kind (models/layer_graph.h)
  std::string shape;  // what was timed, for people ("rows 8192 x 768")
  double forward_s = 0, backward_input_s = 0, backward_weight_s = 0;
};

struct Provenance {
  std::string card, driver, runtime, date, command, host;
};

struct MeasuredDevice {
  std::string base;  // catalog entry, "" for none
  Provenance provenance;
  double copy_bytes_per_s = 0;
  double launch_seconds = 0;
  std::array<GemmTable, 3> gemms;  // by Precision; empty where not measured
  std::vector<MeasuredLayer> layers;

  const GemmTable& table(Precision p) const { return gemms[static_cast<size_t>(p)]; }
  GemmTable& table(Precision p) { return gemms[static_cast<size_t>(p)]; }
};

inline constexpr std::string_view kDeviceFileKind = "device";
inline constexpr int kDeviceFileVersion = 1;

// True when j is an object whose "format" names a device file (any version).
bool is_device_file(const Json& j);
// The DeviceSpec of a device file (see above). Throws InputError naming the JSON path and what
// was expected: a wrong format or version, an unknown base, a missing field, a table that is
// not sizes^3 positive times, a precision name other than fp32/tf32/bf16.
DeviceSpec device_from_file_json(const Json& j, const std::string& path);
// The file of a measured device: the DeviceSpec's own numbers and d.measured (required).
Json device_file_json(const DeviceSpec& d);

// The DeviceSpec of measurements, as the file of `m` with no overrides would read (the base's
// datasheet; memory_bytes only without a base). Throws InputError as device_from_file_json.
DeviceSpec measured_device(const std::string& name, const MeasuredDevice& m, int64_t memory_bytes);

// The measured launch time of one kernel on `d` (0 when not measured).
double launch_seconds(const DeviceSpec& d);
// The measured table of `p` on `d`, or null.
const GemmTable* measured_gemms(const DeviceSpec& d, Precision p);

}  // namespace pw::models
