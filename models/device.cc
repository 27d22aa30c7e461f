#include "models/device.h"

#include "models/device_file.h"
#include "models/error.h"
#include "models/error_text.h"
#include "models/limits.h"

namespace pw::models {

namespace {
constexpr double T = 1e12;
constexpr double G = 1e9;
constexpr int64_t GiB = int64_t{1} << 30;

// Achieved fractions from Calculon's system files (Isaev et al., "Calculon: a Methodology and
// Tool for High-Level Co-Design of Systems and Large Language Models", SC'23;
// github.com/calculon-ai/calculon, systems/*.json), which its authors validated against
// Megatron-LM runs on NVIDIA's Selene.
constexpr const char* kCalculonA100Memory = "Calculon systems/a100_80g.json: HBM 0.90 for >= 100 MB";
constexpr const char* kCalculonH100Memory = "Calculon systems/h100_80g_nvl8.json: HBM 0.90 for >= 100 MB";
constexpr double kV100Ceiling = 101.0 / 112;
constexpr const char* kV100GemmSource =
    "cuBLAS fp16 8192^3 at ~101 of 112 TFLOP/s, V100 PCIe (NVIDIA developer forum, t/79781), standing in for SXM2";
constexpr const char* kCalculonIb =
    "Calculon systems/a100_80g.json and h100_80g_nvl8.json: InfiniBand 0.90 (HDR 25 GB/s, NDR 50 GB/s)";
}  // namespace

const std::vector<DeviceSpec>& device_catalog() {
  // GEMM ceilings (models/gemm_efficiency.h) are published measurements; the TPU and P100
  // entries have none in the MAMF table or elsewhere we could cite, and the CPU entries are
  // priced by their own GEMM-size model (models/cost.h): they keep gemm_ceiling 0.
  static const std::vector<DeviceSpec> catalog = {
      // Google Cloud TPU system architecture docs; Jouppi et al., "A Domain-Specific
      // Supercomputer for Training DNNs", CACM 2020: TPU v2 chip 46 TFLOP/s bf16, 16 GiB HBM
      // at 700 GB/s, 2 cores per chip. fp32 has no published peak: the MXU multiplies in bf16,
      // and fp32 matmuls take ~3 passes; we record bf16/4 as a conservative fp32 figure.
      {"tpu-v2-core", 23 * T / 4, 23 * T, 350 * G, 8 * GiB, "Jouppi et al. CACM 2020 (per core = chip/2)"},
      // TPU v3 chip: 123 TFLOP/s bf16, 32 GiB HBM at 900 GB/s, 2 cores (same source).
      {"tpu-v3-core", 61.5 * T / 4, 61.5 * T, 450 * G, 16 * GiB, "Jouppi et al. CACM 2020 (per core = chip/2)"},
      // NVIDIA Tesla P100 SXM2 datasheet: 10.6 TFLOP/s fp32, 21.2 fp16, 732 GB/s HBM2, 16 GB.
      {"p100-16g", 10.6 * T, 21.2 * T, 732 * G, 16 * GiB, "NVIDIA Tesla P100 datasheet (SXM2)"},
      // NVIDIA V100 SXM2 datasheet: 15.7 TFLOP/s fp32, 125 fp16 tensor, 900 GB/s, 16/32 GB.
      // GEMM ceiling: 101 of 112 TFLOP/s, a cuBLAS fp16 tensor-core product of 8192 x 8192 x 8192
      // on a Tesla V100 PCIe (peak 112 at its 1.38 GHz boost), as reported on NVIDIA's developer
      // forum ("Understanding IPC and issue slot utilization when using Tensor Cores", 2019,
      // forums.developer.nvidia.com/t/79781): the MAMF table has no V100 row, and the PCIe
      // part is the same GV100 GPU with 80 multiprocessors (NVIDIA Tesla V100 GPU Architecture
      // whitepaper) at a lower clock, so its fraction of peak stands in for the SXM2's. (An
      // earlier TensorFlow measurement reached 85 TFLOP/s at 8192 x 8192 fp16, 2017:
      // github.com/yaroslavvb/stuff, matmul_benchmark_seq.py; the cuBLAS figure is the library's
      // own and later.) No V100 memory measurement is published: the datasheet rate stands.
      {"v100-16g", 15.7 * T, 125 * T, 900 * G, 16 * GiB, "NVIDIA V100 datasheet (SXM2)", kV100Ceiling, kV100GemmSource,
       80},
      {"v100-32g", 15.7 * T, 125 * T, 900 * G, 32 * GiB, "NVIDIA V100 datasheet (SXM2)", kV100Ceiling, kV100GemmSource,
       80},
      // NVIDIA A100 datasheet (SXM): 19.5 TFLOP/s fp32, 312 bf16 tensor, 1555 GB/s (40GB),
      // 2039 GB/s (80GB).
      // GEMM ceiling: 267.9 of 312 TFLOP/s, the "Maximum Achievable Matmul FLOPS" of a bf16
      // torch.matmul on an A100 SXM (best of a shape search, CUDA 12.1) in S. Bekman,
      // "Machine Learning Engineering", compute/accelerator/README.md, MAMF comparison table
      // (github.com/stas00/ml-engineering; benchmark: compute/accelerator/benchmarks/mamf-finder.py).
      // 108 streaming multiprocessors (NVIDIA A100 Tensor Core GPU Architecture whitepaper).
      // Memory: large streams reach 0.90 of the HBM rate in Calculon's A100-80GB system
      // (Isaev et al., "Calculon", SC'23; github.com/calculon-ai/calculon systems/a100_80g.json,
      // mem1 MB_efficiency for >= 100 MB), the configuration its authors validated against
      // Megatron-LM runs on Selene; the 40 GB part has the same memory system at a lower clock.
      {"a100-40g", 19.5 * T, 312 * T, 1555 * G, 40 * GiB, "NVIDIA A100 datasheet (SXM4 40GB)", 267.9 / 312,
       "MAMF 267.9 TFLOP/s bf16, A100 SXM (Bekman, ml-engineering)", 108, 0.9, kCalculonA100Memory},
      {"a100-80g", 19.5 * T, 312 * T, 2039 * G, 80 * GiB, "NVIDIA A100 datasheet (SXM4 80GB)", 267.9 / 312,
       "MAMF 267.9 TFLOP/s bf16, A100 SXM (Bekman, ml-engineering)", 108, 0.9, kCalculonA100Memory},
      // NVIDIA H100 SXM5 datasheet: 67 TFLOP/s fp32, 989 bf16 dense, 3.35 TB/s HBM3, 80 GB.
      // GEMM ceiling: 792.1 of 989 TFLOP/s, MAMF of an H100 SXM (CUDA 12.1), same table as A100;
      // 132 streaming multiprocessors (NVIDIA H100 Tensor Core GPU Architecture whitepaper, SXM5).
      // Memory: 0.90 for large streams, Calculon's H100 system (systems/h100_80g_nvl8.json).
      {"h100-80g", 67 * T, 989 * T, 3350 * G, 80 * GiB, "NVIDIA H100 datasheet (SXM5)", 792.1 / 989,
       "MAMF 792.1 TFLOP/s bf16, H100 SXM (Bekman, ml-engineering)", 132, 0.9, kCalculonH100Memory},
      // NVIDIA H200 SXM datasheet: 67 TFLOP/s fp32, 989 bf16 dense, 4.8 TB/s HBM3e, 141 GB. The
      // MAMF table has no H200 row; its GEMM ceiling is the table's GH200 measurement (821.0 of
      // 989 TFLOP/s, CUDA 12.5): the same GH100 GPU with 132 multiprocessors and HBM3e. No H200
      // memory measurement is published either: the H100's fraction stands in (same GPU).
      {"h200-141g", 67 * T, 989 * T, 4800 * G, 141 * GiB, "NVIDIA H200 datasheet (SXM)", 821.0 / 989,
       "MAMF 821.0 TFLOP/s bf16, GH200 (Bekman, ml-engineering), standing in for H200", 132, 0.9,
       "Calculon systems/h100_80g_nvl8.json (H100 HBM3, 0.90 for >= 100 MB), standing in for H200"},
      // A generic two-socket-server socket: 32 cores at 2.0 GHz with two AVX-512 FMA units
      // (32 fp32 FLOP/cycle/core) = 2.05 TFLOP/s fp32, AVX512-BF16 doubles it; 8 channels of
      // DDR4-3200 = 204.8 GB/s; 256 GiB. (Intel Xeon Gold 6338-class, Intel ARK.)
      {"cpu-socket", 2.048 * T, 4.096 * T, 204.8 * G, 256 * GiB, "Intel ARK, Xeon Gold 6338 class socket"},
      // One AVX2 core of this project's CI machine (AMD EPYC, 2 FMA units x 8 fp32 lanes x 2
      // FLOP at ~3 GHz ~ 100 GFLOP/s, as measured on the 2-core EPYC VM), ~20 GB/s of DRAM bandwidth per
      // core, 12 GiB (half of the 24 GiB machine).
      {"cpu-core-avx2", 100 * G, 100 * G, 20 * G, 12 * GiB, "measured on the 2-core CI machine"},
  };
  return catalog;
}

const std::vector<LinkSpec>& link_catalog() {
  static const std::vector<LinkSpec> catalog = {
      // PCI-SIG: PCIe 3.0 x16 = 8 GT/s x 16 lanes, 128b/130b = 15.75 GB/s per direction.
      {"pcie3", 15.75 * G, 1000, "PCI-SIG PCIe 3.0 x16"},
      // PCIe 4.0 x16 = 16 GT/s x 16 = 31.5 GB/s per direction.
      {"pcie4", 31.5 * G, 1000, "PCI-SIG PCIe 4.0 x16"},
      // NVLink 2 (V100): 6 links x 25 GB/s per direction = 150 GB/s (300 GB/s both ways).
      {"nvlink2", 150 * G, 700, "NVIDIA V100 datasheet: 300 GB/s NVLink (bidirectional)"},
      // NVLink 3 (A100): 12 links x 25 GB/s = 300 GB/s per direction (600 GB/s both ways).
      // Achieved: 0.6 of it for transfers and ring collectives (NCCL over NVSwitch), Calculon's
      // A100 system (systems/a100_80g.json, network 0: 300 GB/s, efficiency 0.6).
      {"nvlink3", 300 * G, 700, "NVIDIA A100 datasheet: 600 GB/s NVLink (bidirectional)", 0.6,
       "Calculon systems/a100_80g.json: NVLink 0.6"},
      // NVLink 4 (H100 SXM): 18 links, 900 GB/s both ways = 450 GB/s per direction.
      // Achieved: 0.6, Calculon's H100 system (systems/h100_80g_nvl8.json, 450 GB/s, 0.6).
      {"nvlink4", 450 * G, 700, "NVIDIA H100 datasheet: 900 GB/s NVLink (bidirectional)", 0.6,
       "Calculon systems/h100_80g_nvl8.json: NVLink 0.6"},
      // InfiniBand EDR 4x: 100 Gbit/s = 12.5 GB/s; ~1.5 us MPI latency (Mellanox ConnectX-5).
      // Achieved: 0.9, as Calculon measures HDR and NDR InfiniBand (EDR: the same protocol).
      {"ib-100g", 12.5 * G, 1500, "InfiniBand EDR 4x, Mellanox ConnectX-5 product brief", 0.9, kCalculonIb},
      // InfiniBand HDR 4x: 200 Gbit/s = 25 GB/s (Mellanox ConnectX-6 product brief); one port per
      // GPU on DGX A100 nodes such as Selene's.
      // Achieved: 0.9 (Calculon, as above).
      {"ib-200g", 25 * G, 1500, "InfiniBand HDR 4x, Mellanox ConnectX-6 product brief", 0.9, kCalculonIb},
      // Ethernet line rates; latencies typical of TCP over a top-of-rack switch.
      {"eth-10g", 1.25 * G, 20000, "IEEE 802.3 10GBASE line rate"},
      {"eth-25g", 3.125 * G, 10000, "IEEE 802.3by 25GBASE line rate"},
      {"eth-100g", 12.5 * G, 5000, "IEEE 802.3 100GBASE line rate"},
  };
  return catalog;
}

template <class Spec>
static const Spec& find_in(const std::vector<Spec>& catalog, std::string_view name, const char* what) {
  for (const Spec& s : catalog)
    if (s.name == name) return s;
  std::string known;
  for (const Spec& s : catalog) known += (known.empty() ? "" : ", ") + s.name;
  throw InputError(std::string("unknown ") + what + " \"" + escape_for_message(name) + "\" (known: " + known + ")");
}

double achieved_memory_bandwidth(const DeviceSpec& d) { return d.memory_bandwidth_bytes_per_s * d.memory_efficiency; }
double achieved_bandwidth(const LinkSpec& l) { return l.bandwidth_bytes_per_s * l.efficiency; }

const DeviceSpec& find_device(std::string_view name) { return find_in(device_catalog(), name, "device kind"); }
const LinkSpec& find_link(std::string_view name) { return find_in(link_catalog(), name, "interconnect"); }

void to_json(Json& j, const DeviceSpec& d) {
  if (d.measured != nullptr) {
    j = device_file_json(d);
    return;
  }
  j = Json{{"name", d.name},
           {"peak_fp32_flops", d.peak_fp32_flops},
           {"peak_bf16_flops", d.peak_bf16_flops},
           {"memory_bandwidth_bytes_per_s", d.memory_bandwidth_bytes_per_s},
           {"memory_bytes", d.memory_bytes}};
}

DeviceSpec device_from_json(const Json& j, const std::string& path) {
  if (j.is_string()) return find_device(j.get<std::string>());
  if (is_device_file(j)) return device_from_file_json(j, path);
  require_object(j, path);
  DeviceSpec d;
  d.name = get_string(j, "name", path);
  // 0 = unknown: the device of a measured or imported profile, whose times are in the profile
  // (the analytic cost model refuses such a device, models/cost.h).
  d.peak_fp32_flops =
      check_real_limit(get_number(j, "peak_fp32_flops", path, 0.0), limits::kDeviceRate, path + "/peak_fp32_flops");
  d.peak_bf16_flops = check_real_limit(get_number_or(j, "peak_bf16_flops", path, d.peak_fp32_flops, 0.0),
                                       limits::kDeviceRate, path + "/peak_bf16_flops");
  d.memory_bandwidth_bytes_per_s = check_real_limit(get_number(j, "memory_bandwidth_bytes_per_s", path, 0.0),
                                                    limits::kDeviceRate, path + "/memory_bandwidth_bytes_per_s");
  d.memory_bytes = get_limited(j, "memory_bytes", path, limits::kMemoryBytes);
  for (const DeviceSpec& c : device_catalog())
    if (c.name == d.name && c.peak_bf16_flops == d.peak_bf16_flops &&
        c.memory_bandwidth_bytes_per_s == d.memory_bandwidth_bytes_per_s) {
      d.gemm_ceiling = c.gemm_ceiling;
      d.gemm_source = c.gemm_source;
      d.gemm_units = c.gemm_units;
      d.memory_efficiency = c.memory_efficiency;
      d.memory_source = c.memory_source;
    }
  return d;
}

}  // namespace pw::models
