// Measuring profiler (exec/profiler.h): Profile shape and bytes. Run-to-run stability of the
// measured times is a timing property and lives in bench/exec_bench.cc (BM_ProfilerStability).
#include <doctest/doctest.h>

#include <cmath>

#include "exec/parallel.h"
#include "exec/profiler.h"
#include "models/error.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

models::Model mlp(int64_t width, int64_t depth) {
  models::ZooOptions z;
  z.width = width;
  z.depth = depth;
  z.batch = 8;
  return models::build_zoo_model("mlp", z);
}

TEST_CASE("measured profile: fields, bytes and device") {
  MeasureOptions o;
  o.micro_batch = 4;
  o.reps = 3;
  o.warmup = 1;
  const models::Model m = mlp(16, 2);
  models::Profile p = measure_profile(m, o);
  CHECK(p.source == "measured");
  CHECK(p.micro_batch == 4);
  CHECK(p.device.name == cpu_model_name());
  CHECK(p.device.threads >= 1);
  REQUIRE(p.layers.size() == m.size());
  CHECK(p.edges == m.edges());
  const models::LayerProfile& in = p.layers[0];
  CHECK(in.is_data_loading);
  CHECK(in.output_bytes == 4 * 16 * 4);
  const models::LayerProfile& fc0 = p.layers[1];
  CHECK(fc0.kind == "linear");
  CHECK(fc0.parameter_bytes == (16 * 16 + 16) * 4);
  CHECK(fc0.optimizer_bytes == 2 * fc0.parameter_bytes);  // adam: m and v
  CHECK(fc0.output_bytes == 4 * 16 * 4);
  CHECK(fc0.stash_bytes == 4 * 16 * 4);  // its input
  CHECK(fc0.forward_ns > 0);
  CHECK(fc0.backward_input_ns > 0);
  CHECK(fc0.backward_weight_ns > 0);
  CHECK(p.layers[2].backward_weight_ns == 0);  // relu has no weights
  CHECK(p.layers.back().kind == "mse_loss");
  MeasureOptions bad = o;
  bad.micro_batch = 0;
  CHECK_THROWS_AS(measure_profile(m, bad), InputError);
}

}  // namespace
}  // namespace pw::exec
