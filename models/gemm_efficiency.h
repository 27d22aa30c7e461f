// Shape-aware GEMM time on a catalog device: how close a matrix product of shape (m, n, k)
// comes to the device's 16-bit tensor peak.
//
// A product C[m x n] = A[m x k] B[k x n] (`count` independent ones of that shape, a batched
// GEMM) takes
//   t = 2 m n k count / (peak x ceiling x waves) + e (m k + k n + m n) count / memory_bandwidth
// seconds (e = bytes per element): the arithmetic at the largest fraction of peak that any
// product was measured to reach on the device (DeviceSpec::gemm_ceiling, a published
// measurement named in the catalog), plus the one pass over its operands and result that
// even a perfectly tiled product cannot avoid. The efficiency flops / (t x peak) therefore
// saturates at the ceiling for large products and falls when any dimension is small: a
// product's arithmetic intensity 2 m n k / (e (m k + k n + m n)) is below ~2 min(m, n, k) / e,
// so a thin product (the k = head-dimension attention products, a micro-batch of one row) is
// priced by its memory traffic, a large one by the ceiling.
//
// The arithmetic term is further divided by the tile and wave utilization of the product
// (NVIDIA, "Matrix Multiplication Background User's Guide", sections 2.3 and 3: cuBLAS
// computes C in tiles, at most one per streaming multiprocessor at a time; its most
// efficient tile is 256 x 128): with T = ceil(m/256) ceil(n/128) count tiles (or the
// transposed tile, whichever fills better) on U = DeviceSpec::gemm_units multiprocessors the
// product runs in ceil(T/U) waves, and only m n count / (ceil(T/U) U 256 x 128) of the
// machine's tile slots do useful work. A ceiling measured at a wave-aligned best shape (as the
// catalog's are) is thus not reached by a product that leaves the last wave part-empty.
//
// Devices with gemm_ceiling 0 (no published measurement; the CPU entries) have no curve: the
// cost model keeps its constant efficiency for them. The curve applies to the 16-bit rate
// only (the measurements are bf16/fp16 tensor-core products).
//
// A measured device (DeviceSpec::measured, models/device_file.h) replaces the formula by its
// own table wherever it has one for the precision (element_bytes 2: bf16, 4: fp32): the
// product's time is interpolated from the measured grid (models/gemm_table.h), at fp32 as
// well as bf16.
// All functions are pure and thread-safe.
#pragma once

#include <vector>

#include "models/device.h"

namespace pw::models {

struct GemmShape {
  double m = 0, n = 0, k = 0;
  double count = 1;  // independent products of this shape (batched GEMM)
};

// True when `device` has a measured table at that precision (bf16 or fp32), or a measured
// ceiling and the costs are at its 16-bit rate.
bool has_gemm_curve(const DeviceSpec& device, bool bf16);

// cuBLAS's most efficient tile (see above).
inline constexpr double kTileLong = 256, kTileShort = 128;

// Fraction of the machine's tile slots that do useful work, in (0, 1]; 1 when gemm_units is 0.
double wave_utilization(const DeviceSpec& device, const GemmShape& g);

// FLOPs of the products: 2 m n k count.
double gemm_flops(const GemmShape& g);
// Seconds of the products as above, element_bytes per element (2 for bf16). Requires
// has_gemm_curve(device, element_bytes == 2) and positive dimensions (checked).
double gemm_seconds(const DeviceSpec& device, const GemmShape& g, int element_bytes = 2);
// gemm_flops / (gemm_seconds x the peak of that precision); in (0, gemm_ceiling) on the formula.
double gemm_shape_efficiency(const DeviceSpec& device, const GemmShape& g, int element_bytes = 2);

// The three products of a weight GEMM of forward shape (m, n, k) = (rows, outputs, inputs):
// forward (m, n, k), input gradient (m, k, n), weight gradient (k, n, m).
GemmShape input_gradient_gemm(const GemmShape& forward);
GemmShape weight_gradient_gemm(const GemmShape& forward);

// A layer's products by pass: forward (F), input gradient (B), weight gradient (W).
struct PassGemms {
  std::vector<GemmShape> fwd, bin, bw;
};
// Adds a weight GEMM of forward shape `forward` to all three passes.
void add_weight_product(PassGemms& g, const GemmShape& forward);

double total_gemm_seconds(const DeviceSpec& device, const std::vector<GemmShape>& gemms, int element_bytes = 2);
double total_gemm_flops(const std::vector<GemmShape>& gemms);

}  // namespace pw::models
