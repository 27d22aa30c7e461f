#include "models/gemm_efficiency.h"

#include <doctest/doctest.h>

#include <cmath>

#include "models/cost.h"
#include "models/error.h"
#include "models/zoo.h"

using namespace pw::models;

namespace {

// A100-80GB: 312 TFLOP/s bf16, ceiling 267.9 TFLOP/s, 2039 GB/s of which 0.9 achieved, 108
// multiprocessors.
double a100_seconds(double m, double n, double k, double waves_used) {
  return 2 * m * n * k / (267.9e12 * waves_used) + 2 * (m * k + k * n + m * n) / (0.9 * 2039e9);
}

}  // namespace

TEST_CASE("GEMM curve: measured ceiling, operand traffic and tile waves, by hand") {
  const DeviceSpec& a100 = find_device("a100-80g");
  REQUIRE(has_gemm_curve(a100, true));
  CHECK_FALSE(has_gemm_curve(a100, false));  // measured for 16-bit products only
  // 108 tiles of 256 x 128: one full wave.
  const GemmShape full{256 * 108, 128, 4096};
  CHECK(wave_utilization(a100, full) == 1.0);
  CHECK(gemm_seconds(a100, full) == doctest::Approx(a100_seconds(256 * 108, 128, 4096, 1)).epsilon(1e-12));
  // One tile more: 109 tiles in two waves of 108 (the 128 x 256 tile gives 218 tiles, worse).
  const GemmShape spill{256 * 109, 128, 4096};
  CHECK(wave_utilization(a100, spill) == doctest::Approx(109.0 / 216).epsilon(1e-12));
  CHECK(gemm_seconds(a100, spill) == doctest::Approx(a100_seconds(256 * 109, 128, 4096, 109.0 / 216)).epsilon(1e-12));
  // A batched product is its count of products in one launch: 2 x 54 tiles = one wave.
  CHECK(wave_utilization(a100, {256 * 54, 128, 64, 2}) == 1.0);
  CHECK(gemm_flops({2, 3, 4, 5}) == 240);
  // Efficiency rises with size towards the ceiling and falls for a thin product.
  const double e1 = gemm_shape_efficiency(a100, {1024, 1024, 1024});
  const double e8 = gemm_shape_efficiency(a100, {8192, 8192, 8192});
  const double thin = gemm_shape_efficiency(a100, {8192, 8192, 64});
  CHECK(e1 < e8);
  CHECK(e8 < 267.9 / 312);
  CHECK(e8 > 0.8);
  CHECK(thin < 0.5 * e8);
  // The gradient products of a weight product: (m, k, n) and (k, n, m).
  const GemmShape f{10, 20, 30, 2};
  CHECK(input_gradient_gemm(f).m == 10);
  CHECK(input_gradient_gemm(f).n == 30);
  CHECK(input_gradient_gemm(f).k == 20);
  CHECK(weight_gradient_gemm(f).m == 30);
  CHECK(weight_gradient_gemm(f).n == 20);
  CHECK(weight_gradient_gemm(f).k == 10);
  CHECK(weight_gradient_gemm(f).count == 2);
}

TEST_CASE("GEMM curve: the V100's reproduces the measurement it comes from within 10%") {
  // cuBLAS fp16, 8192^3, ~101 of 112 TFLOP/s on a V100 PCIe (models/device.cc): the curve adds
  // the operand pass and 26 waves of 80 multiprocessors for 2,048 tiles to the measured fraction.
  for (const char* d : {"v100-16g", "v100-32g"}) {
    CAPTURE(d);
    const DeviceSpec& v100 = find_device(d);
    REQUIRE(has_gemm_curve(v100, true));
    CHECK(wave_utilization(v100, {8192, 8192, 8192}) == doctest::Approx(2048.0 / (26 * 80)).epsilon(1e-12));
    const double e = gemm_shape_efficiency(v100, {8192, 8192, 8192});
    CHECK(e < 101.0 / 112);
    CHECK(e > 0.9 * 101.0 / 112);
  }
}

TEST_CASE("GEMM curve: which catalog devices have one") {
  for (const char* d : {"v100-16g", "v100-32g", "a100-40g", "a100-80g", "h100-80g", "h200-141g"}) {
    CAPTURE(d);
    CHECK(find_device(d).gemm_ceiling > 0);
    CHECK(find_device(d).gemm_units > 0);
    CHECK_FALSE(find_device(d).gemm_source.empty());
  }
  // No published measurement, or priced by the CPU model: the constant efficiency stays.
  for (const char* d : {"tpu-v2-core", "tpu-v3-core", "p100-16g", "cpu-socket", "cpu-core-avx2"}) {
    CAPTURE(d);
    CHECK_FALSE(has_gemm_curve(find_device(d), true));
  }
  // A device object that repeats a catalog entry keeps its ceiling; a changed one has none.
  pw::Json j = find_device("a100-80g");
  CHECK(device_from_json(j, "/device").gemm_ceiling == find_device("a100-80g").gemm_ceiling);
  j["memory_bandwidth_bytes_per_s"] = 1e12;
  CHECK(device_from_json(j, "/device").gemm_ceiling == 0);
}

TEST_CASE("analytic profile: matmul layers at their GEMM shapes, others and CPUs unchanged") {
  LayerSpec in;
  in.name = "x";
  in.kind = LayerKind::input;
  in.output_shape = {2048, 1024};
  LayerSpec fc;
  fc.name = "fc";
  fc.kind = LayerKind::linear;
  fc.output_shape = {2048, 4096};
  fc.attrs = {{"in", 1024}, {"out", 4096}};
  fc.inputs = {"x"};
  LayerSpec act;
  act.name = "act";
  act.kind = LayerKind::gelu;
  act.output_shape = {2048, 4096};
  act.inputs = {"fc"};
  const Model m("fc", {in, fc, act});
  const DeviceSpec& a100 = find_device("a100-80g");
  CostOptions curve;
  curve.bf16 = true;
  const Profile p = analytic_profile(m, a100, 2, curve);
  // Rows = 2 x 2048; forward (4096, 4096, 1024); B (4096, 1024, 4096); W (1024, 4096, 4096).
  const double f = gemm_seconds(a100, {4096, 4096, 1024});
  const double bi = gemm_seconds(a100, {4096, 1024, 4096}), bw = gemm_seconds(a100, {1024, 4096, 4096});
  const LayerCost c = layer_cost(fc, 2, 2);
  CHECK(p.layers[1].forward_ns == std::llround(std::max(f, c.forward_mem_bytes / 2039e9) * 1e9));
  const int64_t back = std::llround(std::max(bi + bw, c.backward_mem_bytes / 2039e9) * 1e9);
  CHECK(p.layers[1].backward_input_ns + p.layers[1].backward_weight_ns == back);
  CHECK(p.layers[1].backward_input_ns == std::llround(double(back) * bi / (bi + bw)));
  // The elementwise layer keeps the constant-efficiency roofline.
  CostOptions constant = curve;
  constant.efficiency = 0.5;
  const Profile q = analytic_profile(m, a100, 2, constant);
  CHECK(p.layers[2].forward_ns == q.layers[2].forward_ns);
  CHECK(p.layers[2].backward_input_ns == q.layers[2].backward_input_ns);
  // An explicit efficiency is the old constant: FLOPs / (312 TFLOP/s x 0.5).
  CHECK(q.layers[1].forward_ns == roofline_ns(c.forward_flops, c.forward_mem_bytes, 312e12 * 0.5, 2039e9));
  // At fp32 there is no curve: efficiency 0 is the default constant.
  CostOptions fp32;
  CostOptions fp32_half;
  fp32_half.efficiency = 0.5;
  CHECK(analytic_profile(m, a100, 2, fp32).total_forward_ns() ==
        analytic_profile(m, a100, 2, fp32_half).total_forward_ns());
  // CPU devices: identical profiles with efficiency 0 and 0.5, also with the GEMM-size model.
  for (const char* d : {"cpu-socket", "cpu-core-avx2"}) {
    CAPTURE(d);
    const DeviceSpec& cpu = find_device(d);
    CostOptions zero, half;
    half.efficiency = 0.5;
    zero.gemm_half_rows = half.gemm_half_rows = default_gemm_half_rows(cpu);
    const Profile a = analytic_profile(m, cpu, 1, zero), b = analytic_profile(m, cpu, 1, half);
    for (size_t i = 0; i < a.layers.size(); ++i) {
      CHECK(a.layers[i].forward_ns == b.layers[i].forward_ns);
      CHECK(a.layers[i].backward_input_ns == b.layers[i].backward_input_ns);
      CHECK(a.layers[i].backward_weight_ns == b.layers[i].backward_weight_ns);
    }
  }
}

TEST_CASE("analytic profile: a GPT's throughput on an A100 rises with its width") {
  // Per-sample time per FLOP falls from d_model 512 to 4096 (thin attention products and
  // small products weigh less), and stays above the ceiling's time.
  double previous = 0;
  for (int64_t width : {512, 1024, 2048, 4096}) {
    ZooOptions o;
    o.layers = 2;
    o.d_model = width;
    o.heads = width / 64;
    o.seq = 1024;
    o.vocab = 1000;
    const Model m = build_zoo_model("gpt", o);
    CostOptions co;
    co.bf16 = true;
    const Profile p = analytic_profile(m, find_device("a100-80g"), 4, co);
    const double flops = 4 * model_flops_per_sample(m);
    const double rate = flops / ((p.total_forward_ns() + p.total_backward_ns()) * 1e-9);
    CAPTURE(width);
    CHECK(rate > previous);
    CHECK(rate < 267.9e12);
    previous = rate;
  }
}
