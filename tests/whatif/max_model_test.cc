#include "whatif/max_model.h"

#include <doctest/doctest.h>

#include "models/error.h"
#include "whatif/charts.h"
#include "whatif/eval.h"

using namespace pw::whatif;

namespace {

// A uniform GPT: every block is identical, so the persistent memory grows by the same amount
// per layer; large enough (d_model 8192) that a device holds only a few layers.
WhatifConfig uniform_gpt() {
  WhatifConfig c;
  c.family = "gpt";
  c.d_model = 8192;
  c.heads = 64;
  c.seq = 1024;
  c.vocab = 32000;
  c.tied_embeddings = true;
  c.batch = 32;
  c.micro_batches = "32";
  c.recompute = "on";
  c.schedule = "1f1b";
  c.device = "a100-80g";
  c.optimizer = "adam-mixed";
  return c;
}

}  // namespace

TEST_CASE("max-model: naive < pipelined on one device, the result is the boundary") {
  WhatifConfig c = uniform_gpt();
  c.d_model = 2048;
  c.heads = 16;
  c.devices = 1;
  MaxModelResult naive = find_max_model(c, MaxModelMode::naive);
  MaxModelResult piped = find_max_model(c, MaxModelMode::pipelined);
  CHECK(naive.devices == 1);
  CHECK(naive.layers >= 1);
  CHECK(naive.micro_batches == 1);
  CHECK(naive.recompute_stages == 0);
  CHECK(piped.layers > naive.layers);
  CHECK(piped.parameters > naive.parameters);
  CHECK(piped.recompute_stages == piped.stages);
  // The fullest device is within the capacity, and one more layer does not fit.
  CHECK(piped.memory_bytes <= piped.device_memory_bytes);
  CHECK(piped.weights_optimizer_bytes + piped.activation_bytes == piped.memory_bytes);
  WhatifConfig more = c;
  more.layers = piped.layers + 1;
  more.micro_batches = "32";
  EvalOptions eo;
  eo.simulate = false;
  CHECK_FALSE(evaluate_whatif(more, eo).feasible);
  more.layers = piped.layers;
  CHECK(evaluate_whatif(more, eo).feasible);
}

TEST_CASE("max-model: layers grow linearly with the device count (8 to 128, within 5%)") {
  WhatifConfig c = uniform_gpt();
  std::vector<MaxModelResult> rows = max_model_study(c, {8, 16, 32, 64, 128}, 1 << 20, 0, ProgressMode::off);
  REQUIRE(rows.size() == 6);
  const double per_device_at_8 = static_cast<double>(rows[1].layers) / 8;
  CHECK(rows[1].layers >= 16);
  for (size_t i = 1; i < rows.size(); ++i) {
    CAPTURE(rows[i].devices);
    CAPTURE(rows[i].layers);
    CHECK(rows[i].mode == MaxModelMode::pipelined);
    const double linear = per_device_at_8 * rows[i].devices;
    CHECK(static_cast<double>(rows[i].layers) >= 0.95 * linear);
    CHECK(static_cast<double>(rows[i].layers) <= 1.05 * linear);
  }
  Table t = max_model_table(rows);
  CHECK(t.rows.size() == 6);
  CHECK(t.rows[0][t.column("mode")] == "naive");
  std::string svg = max_model_svg(rows, "test");
  CHECK(svg.find("<polyline") != std::string::npos);
}

TEST_CASE("max-model: nothing fits -> Infeasible, fixed-depth families -> InputError") {
  WhatifConfig c = uniform_gpt();
  c.device = "tpu-v2-core";  // 8 GiB: a 262M-parameter embedding (18 B each) cannot be placed
  c.vocab = 32000;
  c.d_model = 8192;
  CHECK_THROWS_WITH_AS(find_max_model(c, MaxModelMode::pipelined), doctest::Contains("does not fit on 8 x tpu-v2-core"),
                       pw::Infeasible);
  CHECK_THROWS_AS(max_model_study(c, {1, 8}, 1 << 20, 1, ProgressMode::off), pw::Infeasible);
  WhatifConfig v = uniform_gpt();
  v.family = "vgg16";
  CHECK_THROWS_WITH_AS(find_max_model(v, MaxModelMode::naive), doctest::Contains("fixed depth"), pw::InputError);
  CHECK_THROWS_WITH_AS(max_model_study(uniform_gpt(), {}, 1 << 20, 1, ProgressMode::off),
                       doctest::Contains("--devices"), pw::InputError);
  WhatifConfig odd = uniform_gpt();
  CHECK_THROWS_WITH_AS(max_model_study(odd, {12}, 1 << 20, 1, ProgressMode::off),
                       doctest::Contains("12 is not a multiple of devices_per_node = 8"), pw::InputError);
}

TEST_CASE("max-model: mlp searches over depth") {
  WhatifConfig c;
  c.family = "mlp";
  c.width = 16384;
  c.batch = 64;
  c.device = "v100-16g";
  c.optimizer = "adam";
  c.devices = 2;
  c.recompute = "on";
  MaxModelResult one = find_max_model(c, MaxModelMode::naive);
  MaxModelResult two = find_max_model(c, MaxModelMode::pipelined);
  // 16384^2 weights (+bias) at 16 B each: 4 GiB per layer; a 16 GiB device holds 3.
  CHECK(one.layers == 3);
  CHECK(two.layers >= 6);
}

TEST_CASE("max-model: recompute auto (the default) finds the largest model that on finds, memory binding") {
  // Issue 39 made "auto" every command's default; at the boundary memory binds, so the planner
  // recomputes the stages that need it and the largest model is the one "on" finds.
  for (int devices : {1, 8})  // 64 devices: the same, minutes of planner calls
    for (const std::string schedule : {"1f1b", "gpipe"}) {
      WhatifConfig c = uniform_gpt();
      c.d_model = 2048;
      c.heads = 16;
      c.devices = devices;
      c.schedule = schedule;
      c.optimizer = pw::models::kDefaultOptimizer;
      CAPTURE(devices);
      CAPTURE(schedule);
      c.recompute = "on";
      const MaxModelResult on = find_max_model(c, MaxModelMode::pipelined);
      c.recompute = pw::models::kDefaultRecompute;
      const MaxModelResult fallback = find_max_model(c, MaxModelMode::pipelined);
      REQUIRE(on.reason.empty());
      CHECK(fallback.layers == on.layers);
      CHECK(fallback.parameters == on.parameters);
      CHECK(fallback.memory_bytes <= fallback.device_memory_bytes);
      MESSAGE(devices, " devices, ", schedule, ": ", on.layers, " layers with on, ", fallback.layers, " with auto (",
              fallback.recompute_stages, "/", fallback.stages, " stages recomputed)");
    }
}
