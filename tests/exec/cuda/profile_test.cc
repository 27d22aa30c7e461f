// The measuring profiler on a GPU (exec/profile/profiler.h with MeasureOptions::device): a
// valid profile of the same format as the CPU's, at several micro-batch sizes (needs a GPU).
#include <doctest/doctest.h>

#include <string>

#include "exec/profile/profiler.h"
#include "models/error.h"
#include "models/profile.h"
#include "models/zoo.h"

namespace pw::exec::cuda {
namespace {

TEST_CASE("profile --measure on a GPU: every layer timed by CUDA events, at each micro-batch size") {
  models::ZooOptions z;
  z.layers = 2;
  z.d_model = 128;
  z.heads = 4;
  z.seq = 32;
  z.vocab = 256;
  z.batch = 8;
  const models::Model m = models::build_zoo_model("gpt", z);
  MeasureOptions o;
  o.device = Device::cuda(0);
  o.micro_batch = 2;
  o.micro_batches = {1, 2, 4};
  o.reps = 4;
  o.warmup = 2;
  const models::Profile p = measure_profile(m, o);
  CHECK(p.source == "measured");
  CHECK(p.device.name.find("(cuda:0)") != std::string::npos);
  REQUIRE(p.measurement.has_value());
  CHECK(p.measurement->context == "in-context");
  CHECK(p.measurement->co_run_workers == 1);
  REQUIRE(p.layers.size() == m.layers().size());
  for (const auto& l : p.layers) {
    CAPTURE(l.name);
    if (l.is_data_loading) continue;
    CHECK(l.forward_ns > 0);
    CHECK(l.forward_ns < 1'000'000'000);
  }
  CHECK(p.points.size() == 2);  // micro-batches 1 and 4 beside the base 2
  for (const auto& pt : p.points) CHECK((pt.micro_batch == 1 || pt.micro_batch == 4));
  // Bytes from the device's caching allocator: the blocks' weights and their stash.
  CHECK(p.layers[2].parameter_bytes > 0);
  CHECK(p.layers[2].stash_bytes > 0);
  // Same format: written and read back as the CPU's profile is.
  const models::Profile back = models::profile_from_json(Json(p));
  CHECK(back.layers.size() == p.layers.size());
  CHECK(back.points.size() == p.points.size());
  CHECK(back.layers[2].forward_ns == p.layers[2].forward_ns);
}

TEST_CASE("profile --measure on a GPU refuses what a device does not measure") {
  models::ZooOptions z;
  z.depth = 2;
  z.width = 16;
  z.batch = 4;
  const models::Model m = models::build_zoo_model("mlp", z);
  MeasureOptions o;
  o.device = Device::cuda(0);
  o.in_context = false;
  CHECK_THROWS_WITH_AS(measure_profile(m, o), "--isolated: the device profiler times layers in context only",
                       InputError);
}

}  // namespace
}  // namespace pw::exec::cuda
