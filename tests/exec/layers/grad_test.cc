// Every layer's B and W against finite differences (exec/layers/*).
#include <doctest/doctest.h>

#include <cmath>

#include "exec/layer.h"
#include "exec/layers/softmax_rows.h"
#include "models/error.h"
#include "tests/exec/layers/grad_check.h"

namespace pw::exec {
namespace {

using models::LayerKind;
using models::LayerSpec;
using testing::expect_ok;
using testing::grad_check;
using testing::random_tensor;
using testing::spec;

// Values in [-1, 1] but at least `gap` away from 0 (for kinks at zero).
Tensor away_from_zero(std::vector<int64_t> shape, uint64_t seed, float gap = 0.1f) {
  Tensor t = random_tensor(std::move(shape), seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float& v = t.data()[i];
    v = v >= 0 ? gap + v * (1 - gap) : -gap + v * (1 - gap);
  }
  return t;
}

TEST_CASE("linear: B and W match finite differences (2-D and 3-D inputs), both orders") {
  auto l = make_layer(spec("fc", LayerKind::linear, {"x"}, {5}, {{"in", 7}, {"out", 5}}), {{7}});
  l->init_parameters(3);
  std::vector<Tensor> in;
  in.push_back(random_tensor({4, 7}, 1));
  expect_ok(grad_check(*l, in, {true}), 1, 2);
  expect_ok(grad_check(*l, in, {true}, 1e-2, 48, /*w_first=*/true), 1, 2);
  auto l3 = make_layer(spec("fc", LayerKind::linear, {"x"}, {3, 6}, {{"in", 4}, {"out", 6}}), {{3, 4}});
  l3->init_parameters(4);
  std::vector<Tensor> in3;
  in3.push_back(random_tensor({2, 3, 4}, 2));
  expect_ok(grad_check(*l3, in3, {true}), 1, 2);
}

TEST_CASE("lm_head: no bias, matches finite differences") {
  auto l = make_layer(spec("head", LayerKind::lm_head, {"x"}, {3, 11}, {{"seq", 3}, {"d_model", 4}, {"vocab", 11}}),
                      {{3, 4}});
  l->init_parameters(5);
  CHECK(l->parameters().size() == 1);
  std::vector<Tensor> in;
  in.push_back(random_tensor({2, 3, 4}, 3));
  expect_ok(grad_check(*l, in, {true}), 1, 1);
}

TEST_CASE("relu and gelu: B matches finite differences") {
  auto relu = make_layer(spec("r", LayerKind::relu, {"x"}, {3, 5}), {{3, 5}});
  std::vector<Tensor> in;
  in.push_back(away_from_zero({2, 3, 5}, 4));
  expect_ok(grad_check(*relu, in, {true}), 1, 0);
  auto gelu = make_layer(spec("g", LayerKind::gelu, {"x"}, {3, 5}), {{3, 5}});
  std::vector<Tensor> in2;
  in2.push_back(random_tensor({2, 3, 5}, 5, -3, 3));
  expect_ok(grad_check(*gelu, in2, {true}), 1, 0);
}

TEST_CASE("relu forward: exact values") {
  auto relu = make_layer(spec("r", LayerKind::relu, {"x"}, {3}), {{3}});
  Tensor x({1, 3});
  x.data()[0] = -1.5f;
  x.data()[1] = 0.0f;
  x.data()[2] = 2.5f;
  Context ctx;
  const Tensor* in[] = {&x};
  Tensor y = relu->forward(in, ctx);
  CHECK(y.data()[0] == 0.0f);
  CHECK(y.data()[1] == 0.0f);
  CHECK(y.data()[2] == 2.5f);
}

TEST_CASE("layer_norm: B and W (gain, bias) match finite differences") {
  auto l = make_layer(spec("ln", LayerKind::layer_norm, {"x"}, {3, 8}, {{"dim", 8}}), {{3, 8}});
  // non-trivial gain and bias
  for (Tensor* p : l->parameters()) {
    Tensor r = random_tensor(p->shape(), 7, 0.5, 1.5);
    std::copy(r.data(), r.data() + r.numel(), p->data());
  }
  std::vector<Tensor> in;
  in.push_back(random_tensor({2, 3, 8}, 6, -2, 2));
  expect_ok(grad_check(*l, in, {true}), 1, 2);
}

TEST_CASE("softmax_xent: value on a hand-checkable case and gradient") {
  auto l = make_layer(spec("loss", LayerKind::softmax_xent, {"x"}, {1}, {{"rows", 2}, {"classes", 3}}), {{2, 3}});
  CHECK(l->is_loss());
  CHECK(l->num_inputs() == 2);
  Tensor x = Tensor::zeros({1, 2, 3});
  Tensor t({1, 2});
  t.data()[0] = 0;
  t.data()[1] = 2;
  Context ctx;
  const Tensor* in[] = {&x, &t};
  Tensor loss = l->forward(in, ctx);
  CHECK(loss.shape() == std::vector<int64_t>{1});
  CHECK(loss.data()[0] == doctest::Approx(std::log(3.0)).epsilon(1e-6));  // uniform over 3 classes
  std::vector<Tensor> ins;
  ins.push_back(random_tensor({3, 2, 3}, 8, -2, 2));
  Tensor targets({3, 2});
  for (int i = 0; i < 6; ++i) targets.data()[i] = static_cast<float>(i % 3);
  ins.push_back(std::move(targets));
  expect_ok(grad_check(*l, ins, {true, false}), 1, 0);
}

TEST_CASE("softmax_xent: a target outside (0, classes) is an input error") {
  auto l = make_layer(spec("loss", LayerKind::softmax_xent, {"x"}, {1}, {{"rows", 1}, {"classes", 3}}), {{3}});
  Tensor x = Tensor::zeros({2, 3});
  Tensor t({2, 1});
  t.data()[0] = 1;
  t.data()[1] = 3;
  Context ctx;
  const Tensor* in[] = {&x, &t};
  CHECK_THROWS_AS(l->forward(in, ctx), InputError);
}

TEST_CASE("mse_loss: value and gradient") {
  auto l = make_layer(spec("loss", LayerKind::mse_loss, {"x"}, {1}, {{"dim", 4}}), {{4}});
  Tensor x = Tensor::zeros({2, 4});
  Tensor t({2, 4});
  t.fill(2.0f);
  Context ctx;
  const Tensor* in[] = {&x, &t};
  CHECK(l->forward(in, ctx).data()[0] == doctest::Approx(4.0));
  std::vector<Tensor> ins;
  ins.push_back(random_tensor({3, 4}, 9));
  ins.push_back(random_tensor({3, 4}, 10));
  expect_ok(grad_check(*l, ins, {true, false}), 1, 0);
}

TEST_CASE("residual_add: both input gradients") {
  auto l = make_layer(spec("add", LayerKind::residual_add, {"a", "b"}, {2, 3}), {{2, 3}, {2, 3}});
  std::vector<Tensor> ins;
  ins.push_back(random_tensor({2, 2, 3}, 11));
  ins.push_back(random_tensor({2, 2, 3}, 12));
  expect_ok(grad_check(*l, ins, {true, true}), 2, 0);
}

TEST_CASE("embedding: W (token and position tables) matches finite differences") {
  auto l = make_layer(spec("emb", LayerKind::embedding, {"input"}, {5, 4}, {{"vocab", 7}, {"seq", 5}, {"d_model", 4}}),
                      {{5}});
  l->init_parameters(13);
  std::vector<Tensor> ins;
  Tensor ids({3, 5});
  for (int i = 0; i < 15; ++i) ids.data()[i] = static_cast<float>((i * 3) % 7);  // repeated ids
  ins.push_back(std::move(ids));
  expect_ok(grad_check(*l, ins, {false}, 1e-2, 64), 0, 2);
}

TEST_CASE("attention: B and W match finite differences, either order") {
  auto l = make_layer(spec("attn", LayerKind::attention, {"x"}, {4, 6}, {{"seq", 4}, {"d_model", 6}, {"heads", 2}}),
                      {{4, 6}});
  l->init_parameters(14);
  for (Tensor* p : l->parameters()) {  // larger weights so attention is far from uniform
    Tensor r = random_tensor(p->shape(), 15 + p->numel(), -0.5, 0.5);
    std::copy(r.data(), r.data() + r.numel(), p->data());
  }
  std::vector<Tensor> ins;
  ins.push_back(random_tensor({2, 4, 6}, 16));
  expect_ok(grad_check(*l, ins, {true}), 1, 4);
  expect_ok(grad_check(*l, ins, {true}, 1e-2, 48, /*w_first=*/true), 1, 4);
}

TEST_CASE("attention is causal: position i does not depend on later positions") {
  auto l = make_layer(spec("attn", LayerKind::attention, {"x"}, {4, 4}, {{"seq", 4}, {"d_model", 4}, {"heads", 1}}),
                      {{4, 4}});
  l->init_parameters(17);
  Tensor x = random_tensor({1, 4, 4}, 18);
  Context c1, c2;
  const Tensor* in[] = {&x};
  Tensor y1 = l->forward(in, c1);
  for (int j = 12; j < 16; ++j) x.data()[j] += 1.0f;  // change the last position only
  Tensor y2 = l->forward(in, c2);
  for (int j = 0; j < 12; ++j) CHECK(y1.data()[j] == y2.data()[j]);
  CHECK(y1.data()[12] != y2.data()[12]);
}

TEST_CASE("transformer_block: B and W match finite differences, either order") {
  auto l = make_layer(spec("block0", LayerKind::transformer_block, {"x"}, {3, 4},
                           {{"seq", 3}, {"d_model", 4}, {"heads", 2}, {"ffn", 8}}),
                      {{3, 4}});
  l->init_parameters(19);
  for (Tensor* p : l->parameters()) {
    Tensor r = random_tensor(p->shape(), 20 + p->numel(), -0.5, 0.5);
    std::copy(r.data(), r.data() + r.numel(), p->data());
  }
  CHECK(l->parameters().size() == 12);  // ln1 (2), qkv (2), proj (2), ln2 (2), fc1 (2), fc2 (2)
  std::vector<Tensor> ins;
  ins.push_back(random_tensor({2, 3, 4}, 21));
  expect_ok(grad_check(*l, ins, {true}), 1, 12);
  expect_ok(grad_check(*l, ins, {true}, 1e-2, 48, /*w_first=*/true), 1, 12);
}

TEST_CASE("conv2d: B and W match finite differences (stride 2, pad 1)") {
  auto l =
      make_layer(spec("conv", LayerKind::conv2d, {"x"}, {3, 3, 3},
                      {{"in_c", 2}, {"out_c", 3}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"in_h", 5}, {"in_w", 5}}),
                 {{2, 5, 5}});
  l->init_parameters(22);
  std::vector<Tensor> ins;
  ins.push_back(random_tensor({2, 2, 5, 5}, 23));
  expect_ok(grad_check(*l, ins, {true}), 1, 2);
}

TEST_CASE("max_pool and flatten: B matches finite differences") {
  auto l = make_layer(spec("pool", LayerKind::max_pool, {"x"}, {2, 2, 2},
                           {{"c", 2}, {"kernel", 2}, {"stride", 2}, {"in_h", 4}, {"in_w", 4}}),
                      {{2, 4, 4}});
  Tensor x({2, 2, 4, 4});
  for (int i = 0; i < 64; ++i) x.data()[i] = 0.1f * static_cast<float>((i * 37) % 64);  // distinct
  std::vector<Tensor> ins;
  ins.push_back(std::move(x));
  expect_ok(grad_check(*l, ins, {true}), 1, 0);
  auto f = make_layer(spec("flat", LayerKind::flatten, {"x"}, {8}), {{2, 2, 2}});
  std::vector<Tensor> fin;
  fin.push_back(random_tensor({3, 2, 2, 2}, 24));
  expect_ok(grad_check(*f, fin, {true}), 1, 0);
}

TEST_CASE("make_layer rejects unsupported kinds and shape mismatches") {
  CHECK_THROWS_AS(make_layer(spec("bn", LayerKind::batch_norm, {"x"}, {3}, {{"c", 4}}), {{3}}), InputError);
  CHECK_THROWS_AS(make_layer(spec("fc", LayerKind::linear, {"x"}, {5}, {{"in", 7}, {"out", 5}}), {{6}}), InputError);
  CHECK_THROWS_AS(make_layer(spec("fc", LayerKind::linear, {"x"}, {4}, {{"in", 7}, {"out", 5}}), {{7}}), InputError);
  CHECK_THROWS_AS(make_layer(spec("fc", LayerKind::linear, {"x"}, {5}, {{"out", 5}}), {{7}}), InputError);
}

TEST_CASE("attention softmax row kernels match a double-precision reference") {
  for (float x = -87.0f; x <= 88.0f; x += 0.37f) CHECK(std::abs(fast_exp(x) / std::exp(double(x)) - 1.0) < 1e-6);
  CHECK(fast_exp(-200.0f) >= 0.0f);
  CHECK(fast_exp(-200.0f) < 1e-37f);
  for (int64_t n : {1, 15, 16, 17, 40, 256}) {
    std::vector<float> row(n), d(n);
    for (int64_t j = 0; j < n; ++j) {
      row[j] = static_cast<float>(std::sin(0.7 * j) * 9.0);
      d[j] = static_cast<float>(std::cos(0.3 * j));
    }
    const float scale = 0.125f;
    double mx = -1e30, sum = 0;
    for (float v : row) mx = std::max(mx, double(v) * scale);
    std::vector<double> ref(n);
    for (int64_t j = 0; j < n; ++j) sum += ref[j] = std::exp(double(row[j]) * scale - mx);
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += (ref[j] /= sum) * d[j];
    softmax_row(row.data(), n, scale);
    softmax_backward_row(row.data(), d.data(), n, scale);
    for (int64_t j = 0; j < n; ++j) {
      CHECK(row[j] == doctest::Approx(ref[j]).epsilon(1e-5));
      const double dref = ref[j] * (std::cos(0.3 * j) - dot) * scale;
      CHECK(std::abs(d[j] - dref) < 1e-6);
    }
  }
}

}  // namespace
}  // namespace pw::exec
