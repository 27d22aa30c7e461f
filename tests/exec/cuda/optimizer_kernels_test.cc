// The SGD and Adam step kernels against the CPU Optimizer (exec/optimizer.h) (needs a GPU).
#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "exec/cuda/kernels.h"
#include "exec/device_ops.h"
#include "exec/optimizer.h"
#include "tests/exec/cuda/gpu_compare.h"

namespace pw::exec::cuda {
namespace {

void check_steps(const OptimizerOptions& o, int steps) {
  CudaDevice& dev = CudaDevice::get(0);
  Tensor p = testing::uniform({1000, 3}, 1), g = testing::uniform({1000, 3}, 2);
  Tensor dp = to_device(p, dev), dg = to_device(g, dev);
  Tensor dm = Tensor::zeros({1000, 3}, dev.memory()), dv = Tensor::zeros({1000, 3}, dev.memory());
  Optimizer cpu({&p}, {&g}, o);
  for (int t = 1; t <= steps; ++t) {
    cpu.step();
    if (o.kind == OptimizerKind::sgd) {
      kernels::sgd_step(dp.data(), dg.data(), o.momentum > 0 ? dm.data() : nullptr, p.numel(), float(o.lr),
                        float(o.momentum), float(o.weight_decay), dev.stream());
    } else {
      const float c1 = float(1.0 / (1.0 - std::pow(o.beta1, double(t))));
      const float c2 = float(1.0 / (1.0 - std::pow(o.beta2, double(t))));
      kernels::adam_step(dp.data(), dg.data(), dm.data(), dv.data(), p.numel(), float(o.lr), float(o.beta1),
                         float(o.beta2), c1, c2, float(o.eps), float(o.weight_decay), dev.stream());
    }
  }
  testing::expect_close(dp, p, "parameters after the steps", 1e-6);
}

TEST_CASE("sgd and adam step kernels follow the CPU optimizer") {
  OptimizerOptions sgd;
  sgd.lr = 0.05;
  sgd.weight_decay = 0.01;
  check_steps(sgd, 5);
  sgd.momentum = 0;
  check_steps(sgd, 3);
  OptimizerOptions adam;
  adam.kind = OptimizerKind::adam;
  adam.lr = 3e-3;
  adam.weight_decay = 0.1;
  check_steps(adam, 5);
}

// Tensors of sizes around the multi-tensor chunk (exec/cuda/multi_tensor.h).
std::vector<int64_t> fused_sizes() { return {1, 8191, 8192, 8193, 100000, 3, 40000}; }

TEST_CASE("fused Adam over a list of tensors equals one adam step per tensor, bit for bit") {
  CudaDevice& dev = CudaDevice::get(0);
  std::vector<Tensor> p1, p2, g, m1, m2, v1, v2;
  uint64_t seed = 10;
  for (int64_t n : fused_sizes()) {
    const Tensor hp = testing::uniform({n}, ++seed), hg = testing::uniform({n}, ++seed);
    p1.push_back(to_device(hp, dev));
    p2.push_back(to_device(hp, dev));
    g.push_back(to_device(hg, dev));
    for (auto* list : {&m1, &m2, &v1, &v2}) list->push_back(Tensor::zeros({n}, dev.memory()));
  }
  std::vector<Tensor*> pp, gp;
  for (size_t i = 0; i < p2.size(); ++i) {
    pp.push_back(&p2[i]);
    gp.push_back(&g[i]);
  }
  MultiTensorCache cache;
  for (int t = 1; t <= 4; ++t) {
    const float c1 = float(1.0 / (1.0 - std::pow(0.9, double(t)))),
                c2 = float(1.0 / (1.0 - std::pow(0.999, double(t))));
    for (size_t i = 0; i < p1.size(); ++i)
      device_adam_step(p1[i], g[i], m1[i], v1[i], 3e-3f, 0.9f, 0.999f, c1, c2, 1e-8f, 0.1f);
    device_adam_step_all(pp, gp, m2, v2, 3e-3f, 0.9f, 0.999f, c1, c2, 1e-8f, 0.1f, cache);
  }
  for (size_t i = 0; i < p1.size(); ++i) {
    INFO("tensor " << i << " of " << p1[i].numel() << " elements");
    CHECK(testing::bit_equal(to_host(p1[i]), to_host(p2[i])));
    CHECK(testing::bit_equal(to_host(m1[i]), to_host(m2[i])));
    CHECK(testing::bit_equal(to_host(v1[i]), to_host(v2[i])));
  }
  // A parameter swapped for another buffer (weight versions): the table follows the addresses,
  // so the installed buffer takes the step and the swapped-out one keeps its values.
  const Tensor before = to_host(p2[1]);
  Tensor other = p2[1].clone();
  std::swap(p2[1], other);
  device_adam_step_all(pp, gp, m2, v2, 3e-3f, 0.9f, 0.999f, 1.0f, 1.0f, 1e-8f, 0.1f, cache);
  CHECK(testing::bit_equal(to_host(other), before));
  CHECK(!testing::bit_equal(to_host(p2[1]), before));
}

TEST_CASE("the device Optimizer's fused Adam follows the CPU optimizer over several tensors") {
  CudaDevice& dev = CudaDevice::get(0);
  std::vector<Tensor> hp, hg, dp, dg;
  uint64_t seed = 70;
  for (int64_t n : fused_sizes()) {
    hp.push_back(testing::uniform({n}, ++seed));
    hg.push_back(testing::uniform({n}, ++seed));
    dp.push_back(to_device(hp.back(), dev));
    dg.push_back(to_device(hg.back(), dev));
  }
  std::vector<Tensor*> hpp, hgp, dpp, dgp;
  for (size_t i = 0; i < hp.size(); ++i) {
    hpp.push_back(&hp[i]);
    hgp.push_back(&hg[i]);
    dpp.push_back(&dp[i]);
    dgp.push_back(&dg[i]);
  }
  OptimizerOptions adam;
  adam.kind = OptimizerKind::adam;
  adam.lr = 3e-3;
  adam.weight_decay = 0.1;
  Optimizer cpu(hpp, hgp, adam), gpu(dpp, dgp, adam, dev.memory());
  for (int t = 0; t < 5; ++t) {
    cpu.step();
    gpu.step();
  }
  for (size_t i = 0; i < hp.size(); ++i) testing::expect_close(dp[i], hp[i], "tensor " + std::to_string(i), 1e-6);
}

}  // namespace
}  // namespace pw::exec::cuda
