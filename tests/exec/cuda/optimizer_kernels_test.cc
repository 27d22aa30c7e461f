// The SGD and Adam step kernels against the CPU Optimizer (exec/optimizer.h) (needs a GPU).
#include <doctest/doctest.h>

#include <cmath>

#include "exec/cuda/kernels.h"
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

}  // namespace
}  // namespace pw::exec::cuda
