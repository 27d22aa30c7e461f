// CNN layers (exec/layers/{conv,batch_norm,avg_pool,concat,dropout}): B and W against finite
// differences on small shapes, plus the exact properties the pipeline relies on.
#include <doctest/doctest.h>

#include <cmath>

#include "exec/layer.h"
#include "exec/layers/batch_norm.h"
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

void randomize_params(Layer& l, uint64_t seed, double lo, double hi) {
  for (Tensor* p : l.parameters()) {
    Tensor r = random_tensor(p->shape(), seed++, lo, hi);
    std::copy(r.data(), r.data() + r.numel(), p->data());
  }
}

TEST_CASE("conv2d with groups: B and W match finite differences, either order") {
  auto l = make_layer(spec("conv", LayerKind::conv2d, {"x"}, {4, 4, 4},
                           {{"in_c", 4},
                            {"out_c", 4},
                            {"kernel", 3},
                            {"stride", 1},
                            {"pad", 1},
                            {"in_h", 4},
                            {"in_w", 4},
                            {"groups", 2}}),
                      {{4, 4, 4}});
  l->init_parameters(31);
  CHECK(l->parameters()[0]->shape() == std::vector<int64_t>{4, 2, 3, 3});
  auto in = testing::one_tensor(random_tensor({2, 4, 4, 4}, 32));
  expect_ok(grad_check(*l, in, {true}), 1, 2);
  expect_ok(grad_check(*l, in, {true}, 1e-2, 48, /*w_first=*/true), 1, 2);
  CHECK_THROWS_AS(
      make_layer(spec("c", LayerKind::conv2d, {"x"}, {4, 4, 4},
                      {{"in_c", 3}, {"out_c", 4}, {"kernel", 3}, {"pad", 1}, {"in_h", 4}, {"in_w", 4}, {"groups", 2}}),
                 {{3, 4, 4}}),
      InputError);
}

TEST_CASE("conv2d with groups = channels equals a per-channel convolution") {
  // Depthwise 1x1 with weight w_c: y_c = w_c * x_c + b_c, checked exactly.
  auto l = make_layer(spec("dw", LayerKind::conv2d, {"x"}, {3, 2, 2},
                           {{"in_c", 3}, {"out_c", 3}, {"kernel", 1}, {"in_h", 2}, {"in_w", 2}, {"groups", 3}}),
                      {{3, 2, 2}});
  auto p = l->parameters();
  for (int c = 0; c < 3; ++c) {
    p[0]->data()[c] = static_cast<float>(c + 1);
    p[1]->data()[c] = 0.5f;
  }
  Tensor x({1, 3, 2, 2});
  for (int i = 0; i < 12; ++i) x.data()[i] = static_cast<float>(i);
  Context ctx;
  const Tensor* in[] = {&x};
  Tensor y = l->forward(in, ctx);
  for (int i = 0; i < 12; ++i) CHECK(y.data()[i] == static_cast<float>(i * (i / 4 + 1)) + 0.5f);
}

TEST_CASE("batch_norm: B and W (gamma, beta) match finite differences, 4-D and 2-D, either order") {
  auto l = make_layer(spec("bn", LayerKind::batch_norm, {"x"}, {3, 2, 2}, {{"c", 3}}), {{3, 2, 2}});
  randomize_params(*l, 33, 0.5, 1.5);
  auto in = testing::one_tensor(random_tensor({4, 3, 2, 2}, 34, -2, 2));
  expect_ok(grad_check(*l, in, {true}), 1, 2);
  expect_ok(grad_check(*l, in, {true}, 1e-2, 48, /*w_first=*/true), 1, 2);
  auto l2 = make_layer(spec("bn", LayerKind::batch_norm, {"x"}, {5}, {{"c", 5}}), {{5}});
  randomize_params(*l2, 35, 0.5, 1.5);
  auto in2 = testing::one_tensor(random_tensor({6, 5}, 36, -2, 2));
  expect_ok(grad_check(*l2, in2, {true}, 1e-2), 1, 2);
}

TEST_CASE("batch_norm: output is normalized per channel, statistics groups equal separate micro-batches") {
  auto l = make_layer(spec("bn", LayerKind::batch_norm, {"x"}, {2, 3, 3}, {{"c", 2}}), {{2, 3, 3}});
  Tensor x = random_tensor({5, 2, 3, 3}, 37, -3, 5);
  Context ctx;
  const Tensor* in[] = {&x};
  Tensor y = l->forward(in, ctx);
  for (int c = 0; c < 2; ++c) {  // gamma 1, beta 0: mean 0, biased variance ~1 per channel
    double s = 0, s2 = 0;
    for (int b = 0; b < 5; ++b)
      for (int i = 0; i < 9; ++i) {
        const double v = y.data()[(b * 2 + c) * 9 + i];
        s += v;
        s2 += v * v;
      }
    CHECK(std::abs(s / 45) < 1e-5);
    CHECK(s2 / 45 == doctest::Approx(1.0).epsilon(1e-3));
  }
  // Groups of 2: samples [0,2), [2,4), [4,5) each normalized alone.
  auto& bn = dynamic_cast<BatchNorm&>(*l);
  bn.set_group_size(2);
  Context cg;
  Tensor yg = l->forward(in, cg);
  bn.set_group_size(0);
  const std::pair<int64_t, int64_t> parts[] = {{0, 2}, {2, 2}, {4, 1}};
  for (auto [first, count] : parts) {
    Tensor part({count, 2, 3, 3});
    std::copy(x.data() + first * 18, x.data() + (first + count) * 18, part.data());
    Context cp;
    const Tensor* pin[] = {&part};
    Tensor yp = l->forward(pin, cp);
    for (int64_t i = 0; i < yp.numel(); ++i)
      CHECK(yg.data()[first * 18 + i] == doctest::Approx(yp.data()[i]).epsilon(1e-6));
  }
  // Gradients with groups still match finite differences.
  bn.set_group_size(2);
  randomize_params(*l, 38, 0.5, 1.5);
  auto in2 = testing::one_tensor(random_tensor({5, 2, 3, 3}, 39, -2, 2));
  expect_ok(grad_check(*l, in2, {true}), 1, 2);
}

TEST_CASE("batch_norm: with statistics groups, B and W equal those of separate micro-batches") {
  auto l = make_layer(spec("bn", LayerKind::batch_norm, {"x"}, {3, 2, 2}, {{"c", 3}}), {{3, 2, 2}});
  randomize_params(*l, 51, 0.5, 1.5);
  auto& bn = dynamic_cast<BatchNorm&>(*l);
  Tensor x = random_tensor({8, 3, 2, 2}, 52, -2, 2), dy = random_tensor({8, 3, 2, 2}, 53);
  bn.set_group_size(4);
  l->zero_grad();
  Context c;
  const Tensor* in[] = {&x};
  l->forward(in, c);
  std::vector<Tensor> dx = l->backward(in, c, dy);
  std::vector<Tensor> whole;
  for (Tensor* g : l->gradients()) whole.push_back(g->clone());
  bn.set_group_size(0);
  l->zero_grad();
  for (int64_t first : {0, 4}) {
    Tensor xp({4, 3, 2, 2}), dyp({4, 3, 2, 2});
    std::copy(x.data() + first * 12, x.data() + (first + 4) * 12, xp.data());
    std::copy(dy.data() + first * 12, dy.data() + (first + 4) * 12, dyp.data());
    Context cp;
    const Tensor* pin[] = {&xp};
    l->forward(pin, cp);
    std::vector<Tensor> dxp = l->backward(pin, cp, dyp);
    for (int64_t i = 0; i < dxp[0].numel(); ++i)
      CHECK(dxp[0].data()[i] == doctest::Approx(dx[0].data()[first * 12 + i]).epsilon(1e-5));
  }
  auto grads = l->gradients();
  for (size_t k = 0; k < grads.size(); ++k)
    for (int64_t i = 0; i < grads[k]->numel(); ++i)
      CHECK(grads[k]->data()[i] == doctest::Approx(whole[k].data()[i]).epsilon(1e-5));
}

TEST_CASE("batch_norm: running statistics move once per micro-batch (B then W), not per forward") {
  auto l = make_layer(spec("bn", LayerKind::batch_norm, {"x"}, {1, 2}, {{"c", 1}}), {{1, 2}});
  auto& bn = dynamic_cast<BatchNorm&>(*l);
  Tensor x({2, 1, 2});
  const float v[] = {1, 3, 5, 7};  // mean 4, biased var 5, unbiased 20/3
  std::copy(v, v + 4, x.data());
  Context ctx;
  const Tensor* in[] = {&x};
  l->forward(in, ctx);
  ctx.clear();
  l->forward(in, ctx);  // a recomputed forward
  CHECK(bn.running_mean().data()[0] == 0.0f);
  Tensor dy = random_tensor({2, 1, 2}, 40);
  l->backward_input(in, ctx, dy);
  l->backward_weight(in, ctx, dy);
  CHECK(bn.running_mean().data()[0] == doctest::Approx(0.4).epsilon(1e-6));
  CHECK(bn.running_var().data()[0] == doctest::Approx(0.9 + 0.1 * 20.0 / 3.0).epsilon(1e-6));
}

TEST_CASE("avg_pool: window, padded and global pooling, B matches finite differences") {
  auto l = make_layer(spec("pool", LayerKind::avg_pool, {"x"}, {2, 2, 2},
                           {{"c", 2}, {"kernel", 2}, {"stride", 2}, {"in_h", 4}, {"in_w", 4}}),
                      {{2, 4, 4}});
  auto win = testing::one_tensor(random_tensor({2, 2, 4, 4}, 41));
  expect_ok(grad_check(*l, win, {true}), 1, 0);
  auto padded = make_layer(spec("pool", LayerKind::avg_pool, {"x"}, {2, 3, 3},
                                {{"c", 2}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"in_h", 5}, {"in_w", 5}}),
                           {{2, 5, 5}});
  auto pin = testing::one_tensor(random_tensor({2, 2, 5, 5}, 42));
  expect_ok(grad_check(*padded, pin, {true}), 1, 0);
  auto global = make_layer(spec("gap", LayerKind::avg_pool, {"x"}, {3, 1, 1},
                                {{"c", 3}, {"kernel", 3}, {"stride", 1}, {"in_h", 3}, {"in_w", 3}}),
                           {{3, 3, 3}});
  Tensor x({1, 3, 3, 3});
  for (int i = 0; i < 27; ++i) x.data()[i] = static_cast<float>(i);
  Context ctx;
  const Tensor* in[] = {&x};
  Tensor y = global->forward(in, ctx);
  CHECK(y.shape() == std::vector<int64_t>{1, 3, 1, 1});
  for (int c = 0; c < 3; ++c) CHECK(y.data()[c] == doctest::Approx(9 * c + 4));
  auto gin = testing::one_tensor(random_tensor({2, 3, 3, 3}, 43));
  expect_ok(grad_check(*global, gin, {true}), 1, 0);
}

TEST_CASE("concat: channels of feature maps, exact layout and both input gradients") {
  auto l = make_layer(spec("cat", LayerKind::concat, {"a", "b"}, {5, 2, 2}), {{2, 2, 2}, {3, 2, 2}});
  Tensor a({2, 2, 2, 2}), b({2, 3, 2, 2});
  for (int i = 0; i < 16; ++i) a.data()[i] = static_cast<float>(i);
  for (int i = 0; i < 24; ++i) b.data()[i] = static_cast<float>(100 + i);
  Context ctx;
  const Tensor* in[] = {&a, &b};
  Tensor y = l->forward(in, ctx);
  CHECK(y.shape() == std::vector<int64_t>{2, 5, 2, 2});
  CHECK(y.data()[0] == 0.0f);
  CHECK(y.data()[8] == 100.0f);  // sample 0: a's 8 values, then b's 12
  CHECK(y.data()[20] == 8.0f);   // sample 1 starts with a's second sample
  CHECK(y.data()[28] == 112.0f);
  std::vector<Tensor> ins;
  ins.push_back(random_tensor({2, 2, 2, 2}, 44));
  ins.push_back(random_tensor({2, 3, 2, 2}, 45));
  expect_ok(grad_check(*l, ins, {true, true}), 2, 0);
  CHECK_THROWS_AS(make_layer(spec("cat", LayerKind::concat, {"a", "b"}, {5, 2, 2}), {{2, 2, 2}, {3, 2, 3}}),
                  InputError);
}

TEST_CASE("residual_add of feature maps: both input gradients") {
  auto l = make_layer(spec("add", LayerKind::residual_add, {"a", "b"}, {2, 3, 3}), {{2, 3, 3}, {2, 3, 3}});
  std::vector<Tensor> ins;
  ins.push_back(random_tensor({2, 2, 3, 3}, 46));
  ins.push_back(random_tensor({2, 2, 3, 3}, 47));
  expect_ok(grad_check(*l, ins, {true, true}), 2, 0);
}

TEST_CASE("dropout: B matches finite differences, masks depend on (step, sample) only") {
  auto l = make_layer(spec("drop", LayerKind::dropout, {"x"}, {4, 8}, {{"permille", 250}}), {{4, 8}});
  l->init_parameters(48);
  auto in = testing::one_tensor(random_tensor({3, 4, 8}, 49));
  expect_ok(grad_check(*l, in, {true}), 1, 0);
  // Whole batch of 4 at step 5 versus two micro-batches [0,2) and [2,4) of the same step.
  Tensor x = random_tensor({4, 4, 8}, 50);
  Context whole;
  whole.step = 5;
  const Tensor* win[] = {&x};
  Tensor y = l->forward(win, whole);
  int dropped = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    if (y.data()[i] == 0.0f) ++dropped;
    else CHECK(y.data()[i] == doctest::Approx(x.data()[i] / 0.75f).epsilon(1e-6));
  }
  CHECK(dropped > 16);  // 25% of 128 = 32 expected
  CHECK(dropped < 48);
  for (int64_t first : {0, 2}) {
    Tensor part({2, 4, 8});
    std::copy(x.data() + first * 32, x.data() + (first + 2) * 32, part.data());
    Context c;
    c.step = 5;
    c.first_sample = first;
    const Tensor* pin[] = {&part};
    Tensor yp = l->forward(pin, c);
    c.clear();  // re-materialization: same mask again
    Tensor yr = l->forward(pin, c);
    for (int64_t i = 0; i < yp.numel(); ++i) {
      CHECK(yp.data()[i] == y.data()[first * 32 + i]);
      CHECK(yr.data()[i] == yp.data()[i]);
    }
  }
  Context other;
  other.step = 6;
  Tensor y6 = l->forward(win, other);
  int same = 0;
  for (int64_t i = 0; i < y.numel(); ++i) same += (y.data()[i] == 0.0f) == (y6.data()[i] == 0.0f);
  CHECK(same < y.numel());  // another step, another mask
}

}  // namespace
}  // namespace pw::exec
