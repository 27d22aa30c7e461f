// Test helper: a CUDA layer against the oneDNN layer of the same spec, in the same binary.
//
// For a full and a ragged micro-batch: fresh random inputs; output buffers poisoned (the
// device cache is filled with NaN buffers of the output sizes first, so an element a kernel
// does not write reads NaN); forward, B and W (W before B for the ragged batch) compared with
// the CPU layer as a norm-wise relative error; every element finite; a recompute after
// ctx.clear() bit-identical; the same Context::step / first_sample on both sides (dropout).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "exec/cuda/cuda_device.h"
#include "exec/layer.h"
#include "exec/layers/common.h"

namespace pw::exec::cuda::testing {

using Shape = std::vector<int64_t>;
// Makes input k of a micro-batch of `batch` samples (host tensor).
using InputMaker = std::function<Tensor(size_t k, int64_t batch, uint64_t seed)>;

inline Tensor uniform(Shape shape, uint64_t seed, double lo = -1, double hi = 1) {
  Tensor t(std::move(shape));
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(lo + (hi - lo) * rng.uniform());
  return t;
}

inline Tensor integers(Shape shape, uint64_t seed, int64_t below) {
  Tensor t(std::move(shape));
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(rng.below(static_cast<uint64_t>(below)));
  return t;
}

inline double rel_error(const Tensor& got_host, const Tensor& want) {
  REQUIRE(got_host.shape() == want.shape());
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = static_cast<double>(got_host.data()[i]) - want.data()[i];
    num += d * d;
    den += static_cast<double>(want.data()[i]) * want.data()[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

inline bool all_finite(const Tensor& h) {
  for (int64_t i = 0; i < h.numel(); ++i)
    if (!std::isfinite(h.data()[i])) return false;
  return true;
}

inline bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.bytes())) == 0;
}

// Fills the device cache with NaN buffers of these sizes (elements), then frees them: the
// next allocations of those classes on the compute stream get NaN-filled memory.
inline void poison(CudaDevice& dev, const std::vector<int64_t>& sizes) {
  std::vector<Tensor> ts;
  for (int64_t n : sizes)
    for (int copy = 0; copy < 4; ++copy) {
      ts.emplace_back(Shape{n}, dev.memory());
      ts.back().fill(std::nanf(""));
    }
}

inline void expect_close(const Tensor& dev_tensor, const Tensor& want, const std::string& what, double tol = 1e-5) {
  INFO(what);
  const Tensor got = to_host(dev_tensor);
  CHECK(all_finite(got));
  const double e = rel_error(got, want);
  INFO("relative error " << e);
  CHECK(e <= tol);
}

// `differentiable[k]`: input k gets a gradient. `loss`: grad_out is a [1] scale.
inline void compare_layer(const models::LayerSpec& spec, const std::vector<Shape>& in_shapes,
                          const InputMaker& make_input, const std::vector<bool>& differentiable, int64_t full_batch,
                          int64_t ragged_batch, double tol = 1e-5) {
  CudaDevice& dev = CudaDevice::get(0);
  auto cpu = make_layer(spec, in_shapes);
  auto gpu = make_layer(spec, in_shapes, Device::cuda(0));
  cpu->init_parameters(17);
  gpu->init_parameters(17);
  const bool loss = cpu->is_loss();
  uint64_t seed = 100;
  for (int64_t batch : {full_batch, ragged_batch}) {
    INFO("layer " << spec.name << ", micro-batch " << batch);
    const bool w_first = batch == ragged_batch;
    std::vector<Tensor> host, device;
    for (size_t k = 0; k < static_cast<size_t>(cpu->num_inputs()); ++k) {
      host.push_back(make_input(k, batch, ++seed));
      device.push_back(to_device(host.back(), dev));
    }
    std::vector<const Tensor*> hin, din;
    for (auto& t : host) hin.push_back(&t);
    for (auto& t : device) din.push_back(&t);

    Context hctx, dctx;
    hctx.step = dctx.step = 3;
    hctx.first_sample = dctx.first_sample = 5 * batch;
    Tensor hy = cpu->forward(hin, hctx);
    std::vector<int64_t> sizes{hy.numel()};
    for (auto& t : host) sizes.push_back(t.numel());
    poison(dev, sizes);
    Tensor dy = gpu->forward(din, dctx);
    CHECK(dy.device() == Device::cuda(0));
    expect_close(dy, hy, "forward", tol);

    // Recompute: same bits.
    const Tensor first = to_host(dy);
    dctx.clear();
    poison(dev, sizes);
    Tensor again = gpu->forward(din, dctx);
    CHECK(bit_equal(to_host(again), first));

    Tensor hg = loss ? Tensor({1}) : uniform(hy.shape(), ++seed);
    if (loss) hg.data()[0] = 0.375f;
    Tensor dg = to_device(hg, dev);
    cpu->zero_grad();
    gpu->zero_grad();
    std::vector<Tensor> hdx, ddx;
    poison(dev, sizes);
    if (w_first) {
      cpu->backward_weight(hin, hctx, hg);
      gpu->backward_weight(din, dctx, dg);
      hdx = cpu->backward_input(hin, hctx, hg);
      ddx = gpu->backward_input(din, dctx, dg);
    } else {
      hdx = cpu->backward_input(hin, hctx, hg);
      ddx = gpu->backward_input(din, dctx, dg);
      cpu->backward_weight(hin, hctx, hg);
      gpu->backward_weight(din, dctx, dg);
    }
    REQUIRE(hdx.size() == ddx.size());
    for (size_t k = 0; k < hdx.size(); ++k) {
      const bool want = k < differentiable.size() && differentiable[k];
      CHECK(ddx[k].empty() == !want);
      CHECK(hdx[k].empty() == !want);
      if (want && !ddx[k].empty()) expect_close(ddx[k], hdx[k], "B: input gradient " + std::to_string(k), tol);
    }
    const auto hgrads = cpu->gradients(), dgrads = gpu->gradients();
    REQUIRE(hgrads.size() == dgrads.size());
    for (size_t k = 0; k < hgrads.size(); ++k)
      expect_close(*dgrads[k], *hgrads[k], "W: parameter gradient " + std::to_string(k), tol);
    const auto hp = cpu->parameters(), dp = gpu->parameters();
    REQUIRE(hp.size() == dp.size());
    for (size_t k = 0; k < hp.size(); ++k) CHECK(bit_equal(to_host(*dp[k]), *hp[k]));
  }
}

// Per-sample shapes -> an InputMaker of uniform floats [batch, per_sample[k]...].
inline InputMaker floats(std::vector<Shape> per_sample) {
  return [per_sample](size_t k, int64_t batch, uint64_t seed) {
    Shape s{batch};
    s.insert(s.end(), per_sample.at(k).begin(), per_sample.at(k).end());
    return uniform(s, seed);
  };
}

// One micro-batch through B then W, and again through W then B: the same input gradient and
// parameter gradients, bit for bit (the device's kernels and products are deterministic), all
// finite. The output gradient has the output's shape.
inline void check_b_w_order(const models::LayerSpec& s, const Shape& sample, int64_t batch) {
  INFO("layer " << s.name);
  CudaDevice& dev = CudaDevice::get(0);
  auto layer = make_layer(s, {sample}, Device::cuda(0));
  layer->init_parameters(5);
  Shape shape{batch};
  shape.insert(shape.end(), sample.begin(), sample.end());
  const Tensor x = to_device(uniform(shape, 1), dev);
  std::vector<const Tensor*> in{&x};
  std::vector<Tensor> dx;
  std::vector<std::vector<Tensor>> grads(2);
  for (int w_first = 0; w_first < 2; ++w_first) {
    Context ctx;
    layer->zero_grad();
    const Tensor y = layer->forward(in, ctx);
    const Tensor dy = to_device(uniform(y.shape(), 2), dev);
    if (w_first) {
      layer->backward_weight(in, ctx, dy);
      dx.push_back(to_host(layer->backward_input(in, ctx, dy).at(0)));
    } else {
      dx.push_back(to_host(layer->backward_input(in, ctx, dy).at(0)));
      layer->backward_weight(in, ctx, dy);
    }
    for (Tensor* g : layer->gradients()) grads[w_first].push_back(to_host(*g));
  }
  CHECK(all_finite(dx[0]));
  CHECK(bit_equal(dx[0], dx[1]));
  REQUIRE(grads[0].size() == grads[1].size());
  for (size_t k = 0; k < grads[0].size(); ++k) {
    INFO("parameter gradient " << k);
    CHECK(all_finite(grads[0][k]));
    CHECK(bit_equal(grads[0][k], grads[1][k]));
  }
}

}  // namespace pw::exec::cuda::testing
