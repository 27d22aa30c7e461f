// The device dispatch of tensor operations (exec/device_ops.h) on the host, and a device that
// cannot be used named in one InputError by the operations, the Network and the trainer.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "exec/device_ops.h"
#include "exec/layers/network.h"
#include "exec/runtime/trainer.h"
#include "models/error.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

Tensor values(std::vector<float> v) {
  Tensor t({static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data()[i] = v[i];
  return t;
}

std::vector<float> host_values(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  copy_to_host(t, v.data());
  return v;
}

// No machine has a 100th CUDA device; builds without the backend have none at all.
const Device kMissing = Device::cuda(99);

models::Model tiny_mlp() {
  models::ZooOptions z;
  z.depth = 2;
  z.width = 8;
  z.batch = 4;
  return models::build_zoo_model("mlp", z);
}

TEST_CASE("device ops on the host: memory, copies, accumulate, finite flags") {
  CHECK(&device_memory(Device::cpu()) == &Allocator::global());
  Tensor a = values({1, 2, 3});
  Tensor b = copy_to_device(a, Device::cpu());
  CHECK(b.data() != a.data());
  CHECK(host_values(b) == std::vector<float>{1, 2, 3});
  const float in[3] = {0.5f, -1, 4};
  copy_from_host(in, b);
  accumulate(a, b);
  CHECK(host_values(a) == std::vector<float>{1.5f, 1, 7});

  Tensor nan = values({0, std::nanf(""), INFINITY}), inf = values({1, -INFINITY, std::nanf("")});
  CHECK(finite_flags({&a, &nan, &b, &inf}) == std::vector<bool>{true, false, true, false});
  CHECK(finite_flags({}).empty());
  CHECK(nonfinite_kind(nan) == "NaN");
  CHECK(nonfinite_kind(inf) == "Inf");
  CHECK(nonfinite_kind(a).empty());
}

TEST_CASE("a CUDA device that cannot be used is one InputError naming it, before any training") {
  CHECK_THROWS_WITH_AS(device_memory(kMissing), doctest::Contains("device cuda:99: "), InputError);
  CHECK_THROWS_WITH_AS(copy_to_device(values({1}), kMissing), doctest::Contains("device cuda:99: "), InputError);
  CHECK_THROWS_WITH_AS(Network(tiny_mlp(), 1, kMissing), doctest::Contains("device cuda:99: "), InputError);
  TrainOptions o;
  o.steps = 1;
  o.batch = 4;
  o.device = kMissing;
  CHECK_THROWS_WITH_AS(train(tiny_mlp(), o), doctest::Contains("device cuda:99: "), InputError);
}

TEST_CASE("the train-result document names the device") {
  TrainOptions o;
  TrainResult r;
  r.losses = {1.0};
  CHECK(Json(TrainRecord{"mlp", "sgd", 1, o, r}).at("device") == "cpu");
  o.device = Device::cuda(1);
  CHECK(Json(TrainRecord{"mlp", "sgd", 1, o, r}).at("device") == "cuda:1");
}

}  // namespace
}  // namespace pw::exec
