#include "models/optimizer_memory.h"

#include <doctest/doctest.h>

#include "models/error.h"

using namespace pw::models;
using pw::InputError;

TEST_CASE("optimizer memory per parameter") {
  CHECK(find_optimizer("sgd").total() == 8);
  CHECK(find_optimizer("sgd-momentum").total() == 12);
  CHECK(find_optimizer("rmsprop").total() == 12);
  CHECK(find_optimizer("adam").total() == 16);
  const OptimizerMemory& mixed = find_optimizer("adam-mixed");
  CHECK(mixed.total() == 18);  // Adam's 16 in fp32 + a bf16 working copy of the weights
  CHECK(mixed.weight_bytes == 2);
  CHECK(mixed.gradient_bytes == 4);
  CHECK(mixed.state_bytes == 12);
  for (const OptimizerMemory& o : optimizer_catalog()) CHECK(o.gradient_bytes >= o.weight_bytes);
  CHECK_THROWS_WITH_AS(find_optimizer("lamb"),
                       "unknown optimizer \"lamb\" (known: sgd, sgd-momentum, rmsprop, adam, adam-mixed)", InputError);
}

namespace {

// x (4 values per sample) -> fc (4 -> 2 with bias: 10 parameters).
Model one_linear() {
  LayerSpec in;
  in.name = "x";
  in.kind = LayerKind::input;
  in.output_shape = {4};
  LayerSpec fc;
  fc.name = "fc";
  fc.kind = LayerKind::linear;
  fc.output_shape = {2};
  fc.attrs = {{"in", 4}, {"out", 2}};
  fc.inputs = {"x"};
  return Model("one-linear", {in, fc});
}

}  // namespace

TEST_CASE("estimated training bytes: parameters by the optimizer's bytes, activations per micro-batch in flight") {
  const Model m = one_linear();
  // Per sample: x's output 16 B, fc's stash (its input) 16 B and output 8 B = 40 B per sample.
  // Micro-batch 2, 3 in flight: 3 x 80 = 240 B of activations; no workspace.
  CHECK(estimated_training_bytes(m, find_optimizer("adam"), 2, 3) == 10 * 16 + 240);
  CHECK(estimated_training_bytes(m, find_optimizer("sgd-momentum"), 2, 3) == 10 * 12 + 240);
  CHECK(estimated_training_bytes(m, find_optimizer("sgd"), 2, 3) == 10 * 8 + 240);
  // Sizes below 1 count as 1: one sample, one micro-batch.
  CHECK(estimated_training_bytes(m, find_optimizer("sgd"), 0, 0) == 10 * 8 + 40);
}
