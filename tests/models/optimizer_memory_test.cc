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
