// The one optimizer vocabulary (models/optimizer_memory.h): every name, its meaning, and which
// ones the CPU executor trains.
#include <doctest/doctest.h>

#include "models/error.h"
#include "models/optimizer_memory.h"

using namespace pw::models;
using pw::InputError;

TEST_CASE("optimizer names: every name, which the CPU executor trains") {
  CHECK(optimizer_names(" | ") == "sgd | sgd-momentum | rmsprop | adam | adam-mixed");
  CHECK(optimizer_names(", ", true) == "sgd, sgd-momentum, adam");
  for (const OptimizerMemory& o : optimizer_catalog()) CHECK(!o.meaning.empty());
  CHECK(find_optimizer("sgd").meaning == "SGD without momentum");
  CHECK(find_optimizer("sgd-momentum").meaning == "SGD with momentum 0.9");
}

TEST_CASE("optimizer names: the CPU executor's, refused with the names it trains") {
  CHECK(find_cpu_trainable_optimizer("sgd-momentum", "--optimizer").name == "sgd-momentum");
  CHECK(find_cpu_trainable_optimizer("adam", "--optimizer").state_bytes == 8);
  CHECK_THROWS_WITH_AS(find_cpu_trainable_optimizer("rmsprop", "--optimizer"),
                       "--optimizer: the CPU executor cannot train with rmsprop (RMSProp (one running mean of squared "
                       "gradients)); it trains sgd, sgd-momentum, adam (plan and whatif size all of sgd, "
                       "sgd-momentum, rmsprop, adam, adam-mixed)",
                       InputError);
  CHECK_THROWS_WITH_AS(find_cpu_trainable_optimizer("adam-mixed", "--opt"),
                       doctest::Contains("--opt: the CPU executor cannot train with adam-mixed"), InputError);
  CHECK_THROWS_WITH_AS(find_cpu_trainable_optimizer("lion", "--optimizer"),
                       "--optimizer: unknown optimizer \"lion\" (the CPU executor trains sgd, sgd-momentum, adam)",
                       InputError);
}
