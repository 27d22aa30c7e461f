// The CUDA calibration timer and the layer-kind timings on a GPU (needs a GPU): every
// measurement positive and finite, and no rate above what the card can physically do (a unit
// error, milliseconds for seconds, would put it 1,000 times over).
#include <doctest/doctest.h>

#include <cmath>

#include "exec/device_timer.h"
#include "exec/profile/calibrate.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

// Above any card of the catalog: 2 PFLOP/s dense bf16, 10 TB/s of copies (read + written).
constexpr double kMaxFlops = 2e15, kMaxCopy = 2e13;

TEST_CASE("CUDA calibration timer: products at every precision, a copy, a launch") {
  std::unique_ptr<DeviceTimer> t = make_device_timer(Device::cuda(0), 0);
  for (models::Precision p : models::kPrecisions) {
    CAPTURE(models::to_string(p));
    REQUIRE(t->supports(p));
    for (int64_t s : {64, 1024}) {
      const double sec = t->gemm_seconds(p, s, s, s, 3);
      CHECK(std::isfinite(sec));
      CHECK(sec > 0);
      CHECK(2.0 * double(s * s * s) / sec < kMaxFlops);
    }
  }
  const double copy = t->copy_bytes_per_s(int64_t{64} << 20, 3);
  CHECK(copy > 0);
  CHECK(copy < kMaxCopy);
  const double launch = t->launch_seconds(3);
  CHECK(launch > 0);
  CHECK(launch < 1e-3);
  CHECK(t->provenance().card.find("SMs") != std::string::npos);
}

TEST_CASE("CUDA calibration: a device file of a small grid, the layer kinds of a small GPT") {
  std::unique_ptr<DeviceTimer> t = make_device_timer(Device::cuda(0), 0);
  models::ZooOptions z;
  z.layers = 1;
  z.d_model = 64;
  z.heads = 4;
  z.ffn = 256;
  z.seq = 32;
  z.vocab = 128;
  const models::Model m = models::build_zoo_model("gpt", z);
  CalibrateOptions o;
  o.name = "gpu";
  o.base = "h100-80g";
  o.sizes = {64, 128};
  o.precisions = {models::Precision::fp32, models::Precision::bf16};
  o.repeats = 2;
  o.copy_bytes = int64_t{16} << 20;
  o.layer_model = &m;
  o.layer_batch = 2;
  const models::DeviceSpec d = calibrate(*t, o, "today", "test");
  REQUIRE(d.measured != nullptr);
  CHECK(d.measured->table(models::Precision::fp32).seconds.size() == 8);
  CHECK(d.measured->table(models::Precision::bf16).seconds.size() == 8);
  CHECK(d.measured->table(models::Precision::tf32).empty());
  REQUIRE(d.measured->layers.size() == 5);  // embedding, block, norm, head, loss
  for (const models::MeasuredLayer& l : d.measured->layers) {
    CAPTURE(l.kind);
    CHECK(l.forward_s > 0);
    CHECK(std::isfinite(l.backward_input_s));
  }
}

}  // namespace
}  // namespace pw::exec
