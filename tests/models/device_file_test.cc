#include "models/device_file.h"

#include <doctest/doctest.h>

#include "models/cost.h"
#include "models/error.h"
#include "models/gemm_efficiency.h"
#include "models/transformer_cost.h"
#include "models/zoo.h"

using namespace pw::models;
using pw::InputError;
using pw::Json;

namespace {

// An H100-based file: fp32 products at 40 TFLOP/s, except 4096^3 at 50; copies at 3 TB/s;
// launches of 5 us.
Json h100_file() {
  Json times = Json::array();
  for (int64_t m : {64, 4096})
    for (int64_t n : {64, 4096})
      for (int64_t k : {64, 4096})
        times.push_back(2.0 * double(m * n * k) / (m == 4096 && n == 4096 && k == 4096 ? 50e12 : 40e12));
  return Json{{"format", "pipewright.device/1"},
              {"name", "h100-measured"},
              {"base", "h100-80g"},
              {"provenance", {{"card", "NVIDIA H100 80GB HBM3"}, {"date", "2026-11-28"}}},
              {"copy_bytes_per_s", 3e12},
              {"launch_seconds", 5e-6},
              {"gemm", {{"sizes", {64, 4096}}, {"fp32", times}}},
              {"layers", Json::array({{{"kind", "layer_norm"}, {"shape", "rows 8192 x 768"}, {"forward_s", 1e-5}}})}};
}

LayerSpec linear(int64_t in, int64_t out) {
  LayerSpec l;
  l.name = "fc";
  l.kind = LayerKind::linear;
  l.output_shape = {out};
  l.attrs = {{"in", in}, {"out", out}, {"bias", 0}};
  return l;
}

}  // namespace

TEST_CASE("device file: the base's datasheet, the measured rates and tables") {
  const DeviceSpec d = device_from_json(h100_file(), "");
  const DeviceSpec& base = find_device("h100-80g");
  CHECK(d.name == "h100-measured");
  CHECK(d.peak_fp32_flops == base.peak_fp32_flops);
  CHECK(d.memory_bytes == base.memory_bytes);
  CHECK(d.memory_bandwidth_bytes_per_s == base.memory_bandwidth_bytes_per_s);
  CHECK(achieved_memory_bandwidth(d) == doctest::Approx(3e12));
  CHECK(d.memory_source.find("measured device copy on NVIDIA H100 80GB HBM3, 2026-11-28") == 0);
  REQUIRE(d.measured != nullptr);
  CHECK(d.measured->layers.size() == 1);
  CHECK(launch_seconds(d) == 5e-6);
  // fp32 from the table; bf16 from the catalog's ceiling formula (not measured here).
  CHECK(has_gemm_curve(d, false));
  CHECK(has_gemm_curve(d, true));
  CHECK(measured_gemms(d, Precision::tf32) == nullptr);
  CHECK(gemm_seconds(d, {4096, 4096, 4096}, 4) == doctest::Approx(2.0 * 4096 * 4096 * 4096 / 50e12));
  CHECK(gemm_seconds(d, {4096, 4096, 4096}, 2) == doctest::Approx(gemm_seconds(base, {4096, 4096, 4096}, 2)));
  CHECK(gemm_shape_efficiency(d, {4096, 4096, 4096}, 4) == doctest::Approx(50e12 / base.peak_fp32_flops));
}

TEST_CASE("device file: written and read back unchanged") {
  const DeviceSpec d = device_from_json(h100_file(), "");
  Json j;
  to_json(j, d);
  const DeviceSpec e = device_from_json(j, "");
  CHECK(e.name == d.name);
  CHECK(e.memory_efficiency == d.memory_efficiency);
  CHECK(e.measured->table(Precision::fp32).seconds == d.measured->table(Precision::fp32).seconds);
  CHECK(e.measured->provenance.card == "NVIDIA H100 80GB HBM3");
  CHECK(device_file_json(e) == device_file_json(d));
}

TEST_CASE("device file without a base: the measured rates are the peaks") {
  Json j = h100_file();
  j.erase("base");
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), doctest::Contains("memory_bytes"), InputError);
  j["memory_bytes"] = int64_t{1} << 30;
  const DeviceSpec d = device_from_json(j, "");
  CHECK(d.peak_fp32_flops == doctest::Approx(50e12));
  CHECK(d.peak_bf16_flops == doctest::Approx(50e12));  // no bf16 table: the fp32 rate
  CHECK(d.memory_bandwidth_bytes_per_s == 3e12);
  CHECK(d.memory_efficiency == 1);
  CHECK_FALSE(measured_gemms(d, Precision::bf16));
  CHECK(has_gemm_curve(d, false));
  CHECK_FALSE(has_gemm_curve(d, true));
}

TEST_CASE("the analytic profile prices a measured device's products by its table, plus launches") {
  const DeviceSpec d = device_from_json(h100_file(), "");
  LayerSpec in;
  in.name = "x";
  in.kind = LayerKind::input;
  in.output_shape = {4096};
  LayerSpec fc = linear(4096, 4096);
  fc.inputs = {"x"};
  const Model m("one", {in, fc});
  const Profile p = analytic_profile(m, d, 4096);  // fp32, the device's curve
  const double product = 2.0 * 4096 * 4096 * 4096 / 50e12;
  CHECK(p.layers[1].forward_ns == std::llround((product + 5e-6) * 1e9));
  CHECK(p.layers[1].backward_input_ns + p.layers[1].backward_weight_ns == std::llround((2 * product + 10e-6) * 1e9));
  // A catalog device has no launch term: the same product on the plain H100 at bf16.
  CHECK(launch_seconds(find_device("h100-80g")) == 0);
}

TEST_CASE("block launches count the products and the memory-bound kernels") {
  BlockShape b;
  b.batch = 1;
  b.seq = 128;
  b.d_model = 256;
  b.heads = 4;
  b.ffn = 1024;
  const PassSeconds n = block_launches(b, BlockKernels{});
  CHECK(n.f == 4 + 2 + 6);  // four weight products, two score products, six kernels
  CHECK(n.b == 4 + 2 + 6);
  CHECK(n.w == 4);
  b.mlp = false;
  CHECK(block_launches(b, kMegatronKernels).f == 2 + 2 + 1 + 1);
}

TEST_CASE("bad device files name the path and what was expected") {
  Json j = h100_file();
  j["format"] = "pipewright.device/2";
  CHECK_THROWS_WITH_AS(device_from_json(j, ""),
                       "/format: expected \"pipewright.device/1\", got \"pipewright.device/2\"", InputError);
  j = h100_file();
  j["gemm"]["fp64"] = j["gemm"]["fp32"];
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), "/gemm/fp64: expected a precision (fp32, tf32 or bf16)", InputError);
  j = h100_file();
  j["gemm"]["fp32"].erase(0);
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), "/gemm/fp32: expected 8 times (sizes^3), got 7", InputError);
  j = h100_file();
  j["gemm"]["fp32"][2] = "fast";
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), "/gemm/fp32/2: expected a number, got string", InputError);
  j = h100_file();
  j["base"] = "h900";
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), doctest::Contains("/base: unknown device kind \"h900\""), InputError);
  j = h100_file();
  j["launch_seconds"] = -1;
  CHECK_THROWS_AS(device_from_json(j, ""), InputError);
  j = h100_file();
  j["layers"][0].erase("kind");
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), doctest::Contains("/layers/0"), InputError);
  // Values beyond the limits a run's durations and a measured grid have (models/limits.h).
  j = h100_file();
  j["gemm"]["fp32"][5] = 1e300;
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), "/gemm/fp32/5: expected a value in [0, 1000000], got 1e+300",
                       InputError);
  j = h100_file();
  j["gemm"]["sizes"][1] = int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), doctest::Contains("/gemm/sizes/1: expected an integer in [1, 1048576]"),
                       InputError);
  j = h100_file();
  j["layers"][0]["backward_weight_s"] = 1e300;
  CHECK_THROWS_WITH_AS(device_from_json(j, ""), doctest::Contains("/layers/0/backward_weight_s: expected a value in"),
                       InputError);
}
