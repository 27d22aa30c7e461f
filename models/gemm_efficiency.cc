#include "models/gemm_efficiency.h"

#include <algorithm>
#include <cmath>

#include "models/device_file.h"
#include "models/error.h"

namespace pw::models {

namespace {

const GemmTable* table_for(const DeviceSpec& device, int element_bytes) {
  return measured_gemms(device, element_bytes == 2 ? Precision::bf16 : Precision::fp32);
}

}  // namespace

bool has_gemm_curve(const DeviceSpec& device, bool bf16) {
  if (table_for(device, bf16 ? 2 : 4) != nullptr) return true;
  return bf16 && device.gemm_ceiling > 0 && device.peak_bf16_flops > 0 && device.memory_bandwidth_bytes_per_s > 0;
}

double gemm_flops(const GemmShape& g) { return 2.0 * g.m * g.n * g.k * g.count; }

double wave_utilization(const DeviceSpec& device, const GemmShape& g) {
  if (device.gemm_units < 1) return 1.0;
  auto tiles = [&](double tm, double tn) { return std::ceil(g.m / tm) * std::ceil(g.n / tn) * g.count; };
  auto utilization = [&](double tm, double tn) {
    const double n = tiles(tm, tn), units = device.gemm_units;
    return (g.m * g.n * g.count) / (std::ceil(n / units) * units * tm * tn);
  };
  return std::max(utilization(kTileLong, kTileShort), utilization(kTileShort, kTileLong));
}

double gemm_seconds(const DeviceSpec& device, const GemmShape& g, int element_bytes) {
  PW_CHECK(has_gemm_curve(device, element_bytes == 2), "gemm_seconds needs a device with a GEMM curve");
  PW_CHECK(g.m > 0 && g.n > 0 && g.k > 0 && g.count > 0, "GEMM dimensions must be positive");
  if (const GemmTable* t = table_for(device, element_bytes)) return t->product_seconds(g.m, g.n, g.k, g.count);
  const double compute = gemm_flops(g) / (device.peak_bf16_flops * device.gemm_ceiling * wave_utilization(device, g));
  const double traffic = element_bytes * (g.m * g.k + g.k * g.n + g.m * g.n) * g.count;
  return compute + traffic / achieved_memory_bandwidth(device);
}

double gemm_shape_efficiency(const DeviceSpec& device, const GemmShape& g, int element_bytes) {
  const double peak = element_bytes == 2 ? device.peak_bf16_flops : device.peak_fp32_flops;
  return gemm_flops(g) / (gemm_seconds(device, g, element_bytes) * peak);
}

GemmShape input_gradient_gemm(const GemmShape& f) { return {f.m, f.k, f.n, f.count}; }
GemmShape weight_gradient_gemm(const GemmShape& f) { return {f.k, f.n, f.m, f.count}; }

void add_weight_product(PassGemms& g, const GemmShape& forward) {
  g.fwd.push_back(forward);
  g.bin.push_back(input_gradient_gemm(forward));
  g.bw.push_back(weight_gradient_gemm(forward));
}

double total_gemm_seconds(const DeviceSpec& device, const std::vector<GemmShape>& gemms, int element_bytes) {
  double t = 0;
  for (const GemmShape& g : gemms) t += gemm_seconds(device, g, element_bytes);
  return t;
}

double total_gemm_flops(const std::vector<GemmShape>& gemms) {
  double f = 0;
  for (const GemmShape& g : gemms) f += gemm_flops(g);
  return f;
}

}  // namespace pw::models
