// Network / LayerRange (exec/network.h): boundaries, micro-batching, split backward,
// re-materialization, weight swapping.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "exec/layers/network.h"
#include "models/error.h"
#include "models/zoo.h"
#include "tests/exec/layers/grad_check.h"

namespace pw::exec {
namespace {

using models::LayerKind;
using models::LayerSpec;
using testing::random_tensor;
using testing::spec;

// x -> fc1 -> relu -> fc2 -> add(fc2, fc1) -> fc3 -> loss (mse): a skip connection from fc1.
models::Model skip_model() {
  return models::Model("skip", {
                                   spec("x", LayerKind::input, {}, {4}),
                                   spec("fc1", LayerKind::linear, {"x"}, {6}, {{"in", 4}, {"out", 6}}),
                                   spec("relu", LayerKind::relu, {"fc1"}, {6}),
                                   spec("fc2", LayerKind::linear, {"relu"}, {6}, {{"in", 6}, {"out", 6}}),
                                   spec("add", LayerKind::residual_add, {"fc2", "fc1"}, {6}),
                                   spec("fc3", LayerKind::linear, {"add"}, {3}, {{"in", 6}, {"out", 3}}),
                                   spec("loss", LayerKind::mse_loss, {"fc3"}, {1}, {{"dim", 3}}),
                               });
}

std::vector<Tensor> batch(int64_t n, uint64_t seed) {
  std::vector<Tensor> v;
  v.push_back(random_tensor({n, 4}, seed));
  v.push_back(random_tensor({n, 3}, seed + 1));
  return v;
}

Tensor scalar(float v) {
  Tensor t({1});
  t.data()[0] = v;
  return t;
}

std::vector<std::vector<float>> grads_of(Network& net) {
  std::vector<std::vector<float>> g;
  for (Tensor* t : net.gradients()) g.emplace_back(t->data(), t->data() + t->numel());
  return g;
}

void check_close(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].size() == b[i].size());
    double num = 0, den = 0;
    for (size_t k = 0; k < a[i].size(); ++k) {
      num += (a[i][k] - b[i][k]) * double(a[i][k] - b[i][k]);
      den += double(b[i][k]) * b[i][k];
    }
    CHECK(std::sqrt(num) <= tol * std::max(1e-12, std::sqrt(den)));
  }
}

// Whole-model fused backward on one micro-batch: the reference.
std::vector<std::vector<float>> reference(Network& net, std::vector<Tensor> in) {
  LayerRange all(net, 0, net.size());
  net.zero_grad();
  all.forward(0, std::move(in));
  all.backward(0, testing::one_tensor(scalar(1.0f)));
  return grads_of(net);
}

TEST_CASE("LayerRange boundaries: data, targets, skip connections and sinks") {
  Network net(skip_model(), 7);
  LayerRange a(net, 0, 3), b(net, 3, 7), all(net, 0, 7);
  REQUIRE(a.inputs().size() == 1);
  CHECK(a.inputs()[0].name == kDataInput);
  REQUIRE(a.outputs().size() == 2);  // fc1 (read by add in b) and relu
  CHECK(a.outputs()[0].name == "fc1");
  CHECK(a.outputs()[1].name == "relu");
  REQUIRE(b.inputs().size() == 3);  // relu, fc1, targets (order of first use)
  CHECK(b.inputs()[0].name == "relu");
  CHECK(b.inputs()[1].name == "fc1");
  CHECK(b.inputs()[2].name == kTargetInput);
  CHECK(b.inputs()[2].sample_shape == std::vector<int64_t>{3});
  REQUIRE(b.outputs().size() == 1);
  CHECK(b.outputs()[0].name == "loss");
  CHECK(b.has_loss());
  CHECK_FALSE(a.has_loss());
  CHECK(all.inputs().size() == 2);
  CHECK(all.outputs().size() == 1);
  CHECK_THROWS_AS(LayerRange(net, 3, 3), InputError);
}

TEST_CASE("two ranges give the same loss and gradients as one range") {
  Network net(skip_model(), 7);
  auto ref = reference(net, batch(5, 1));
  LayerRange a(net, 0, 3), b(net, 3, 7);
  net.zero_grad();
  std::vector<Tensor> in = batch(5, 1);
  std::vector<Tensor> first;
  first.push_back(std::move(in[0]));
  std::vector<Tensor> mid = a.forward(0, std::move(first));
  std::vector<Tensor> second;
  second.push_back(std::move(mid[1]));  // relu
  second.push_back(std::move(mid[0]));  // fc1
  second.push_back(std::move(in[1]));   // targets
  std::vector<Tensor> loss = b.forward(0, std::move(second));
  REQUIRE(loss.size() == 1);
  std::vector<Tensor> gb = b.backward(0, testing::one_tensor(scalar(1.0f)));
  REQUIRE(gb.size() == 3);
  CHECK(gb[2].empty());  // no gradient for targets
  std::vector<Tensor> ga;
  ga.push_back(std::move(gb[1]));  // d fc1
  ga.push_back(std::move(gb[0]));  // d relu
  std::vector<Tensor> gx = a.backward(0, std::move(ga));
  CHECK(gx.size() == 1);
  CHECK(gx[0].empty());
  check_close(grads_of(net), ref, 1e-6);
  CHECK(a.num_in_flight() == 0);
  CHECK(b.num_in_flight() == 0);
}

TEST_CASE("micro-batches scaled by 1/m accumulate to the whole batch's gradient") {
  Network net(skip_model(), 3);
  auto ref = reference(net, batch(6, 11));
  LayerRange all(net, 0, net.size());
  net.zero_grad();
  std::vector<Tensor> full = batch(6, 11);
  // Split rows 0-2 and 3-5 into two micro-batches, both in flight at once (GPipe order).
  for (int j = 0; j < 2; ++j) {
    std::vector<Tensor> part;
    for (Tensor& t : full) {
      const int64_t cols = t.dim(1);
      Tensor p({3, cols});
      std::copy(t.data() + j * 3 * cols, t.data() + (j + 1) * 3 * cols, p.data());
      part.push_back(std::move(p));
    }
    all.forward(j, std::move(part));
  }
  CHECK(all.num_in_flight() == 2);
  all.backward(1, testing::one_tensor(scalar(0.5f)));
  all.backward(0, testing::one_tensor(scalar(0.5f)));
  check_close(grads_of(net), ref, 1e-5);
}

TEST_CASE("split B then W, and re-materialization, equal the fused backward") {
  Network net(skip_model(), 5);
  auto ref = reference(net, batch(4, 21));
  LayerRange all(net, 0, net.size());
  net.zero_grad();
  all.forward(0, batch(4, 21));
  const int64_t stashed = all.stash_bytes(0);
  all.drop_stash(0);
  CHECK(all.stash_bytes(0) < stashed);  // only the inputs remain
  CHECK(all.stash_bytes(0) == (4 * 4 + 4 * 3) * 4);
  all.backward_input(0, testing::one_tensor(scalar(1.0f)));
  for (auto& g : grads_of(net))
    for (float v : g) CHECK(v == 0.0f);  // B alone touches no parameter gradient
  all.backward_weight(0);
  check_close(grads_of(net), ref, 1e-6);
  CHECK_FALSE(all.in_flight(0));
}

TEST_CASE("backward frees each layer's stash as it goes, fused and B then W") {
  // Fused: after fc1's W (layer 1) nothing but the range's inputs is left ((4x4 data + 4x3
  // targets) floats); every step before frees something.
  Network net(skip_model(), 5);
  auto ref = reference(net, batch(4, 21));
  LayerRange all(net, 0, net.size());
  net.zero_grad();
  all.forward(0, batch(4, 21));
  std::vector<int64_t> held;
  const std::function<void(int)> after = [&](int) { held.push_back(all.stash_bytes(0)); };
  held.push_back(all.stash_bytes(0));
  all.backward(0, testing::one_tensor(scalar(1.0f)), &after);
  REQUIRE(held.size() == 8);
  for (size_t k = 1; k + 1 < held.size(); ++k) {
    CAPTURE(k);
    CHECK(held[k] < held[k - 1]);
  }
  CHECK(held[6] == (4 * 4 + 4 * 3) * 4);
  check_close(grads_of(net), ref, 0);

  // B then W on a GPT: B keeps what W reads (and adds the output gradients W needs); W frees
  // layer after layer; the gradients are those of the fused backward.
  models::ZooOptions o;
  o.layers = 2;
  o.d_model = 16;
  o.heads = 2;
  o.seq = 8;
  o.vocab = 32;
  const models::Model gpt = models::build_zoo_model("gpt", o);
  Network g(gpt, 3);
  auto gpt_batch = [] {
    std::vector<Tensor> in;
    Tensor tokens({2, 8}), targets({2, 8});
    for (int64_t k = 0; k < 16; ++k) {
      tokens.data()[k] = static_cast<float>((k * 7) % 32);
      targets.data()[k] = static_cast<float>((k * 5 + 1) % 32);
    }
    in.push_back(std::move(tokens));
    in.push_back(std::move(targets));
    return in;
  };
  const auto fused = reference(g, gpt_batch());
  LayerRange r(g, 0, g.size());
  g.zero_grad();
  r.forward(0, gpt_batch());
  r.backward_input(0, testing::one_tensor(scalar(1.0f)));
  std::vector<int64_t> w_held;
  const std::function<void(int)> w_after = [&](int) { w_held.push_back(r.stash_bytes(0)); };
  r.backward_weight(0, &w_after);
  REQUIRE(w_held.size() == static_cast<size_t>(g.size()));
  for (size_t k = 1; k < w_held.size(); ++k) CHECK(w_held[k] <= w_held[k - 1]);
  CHECK(w_held.back() < w_held.front());
  check_close(grads_of(g), fused, 1e-6);
}

TEST_CASE("weight versions: swapping parameter tensors changes what forward reads") {
  Network net(skip_model(), 5);
  LayerRange all(net, 0, net.size());
  std::vector<Tensor> stash;
  for (Tensor* p : net.parameters()) stash.push_back(p->clone());
  const float l0 = all.forward(0, batch(4, 31))[0].data()[0];
  all.release(0);
  for (Tensor* p : net.parameters()) p->fill(0.0f);
  const float l_zero = all.forward(1, batch(4, 31))[0].data()[0];
  all.release(1);
  CHECK(l_zero != l0);
  auto params = net.parameters();
  for (size_t i = 0; i < params.size(); ++i) std::swap(*params[i], stash[i]);
  CHECK(all.forward(2, batch(4, 31))[0].data()[0] == l0);
}

TEST_CASE("Network: deterministic seeded initialization, shape mismatches are input errors") {
  Network a(skip_model(), 9), b(skip_model(), 9), c(skip_model(), 10);
  auto pa = a.parameters(), pb = b.parameters(), pc = c.parameters();
  CHECK(std::equal(pa[0]->data(), pa[0]->data() + pa[0]->numel(), pb[0]->data()));
  CHECK_FALSE(std::equal(pa[0]->data(), pa[0]->data() + pa[0]->numel(), pc[0]->data()));
  CHECK(a.target_shape() == std::vector<int64_t>{3});
  models::Model bad("bad", {spec("x", LayerKind::input, {}, {4}),
                            spec("fc", LayerKind::linear, {"x"}, {6}, {{"in", 5}, {"out", 6}})});
  CHECK_THROWS_AS(Network(bad, 1), InputError);
}

TEST_CASE("zoo models instantiate: gpt (tied and untied), mlp, small vgg16") {
  models::ZooOptions z;
  z.layers = 1;
  z.d_model = 16;
  z.heads = 2;
  z.ffn = 32;
  z.seq = 8;
  z.vocab = 256;
  z.batch = 2;
  Network gpt(models::build_zoo_model("gpt", z), 1);
  z.tied_embeddings = true;
  Network tied(models::build_zoo_model("gpt", z), 1);
  CHECK(tied.parameter_bytes() == gpt.parameter_bytes() - 256 * 16 * 4);
  z.depth = 2;
  z.width = 8;
  Network mlp(models::build_zoo_model("mlp", z), 1);
  z.image = 32;
  z.width_divisor = 16;
  z.classes = 10;
  Network vgg(models::build_zoo_model("vgg16", z), 1);
  LayerRange r(vgg, 0, vgg.size());
  std::vector<Tensor> in;
  in.push_back(random_tensor({2, 3, 32, 32}, 1));
  Tensor t({2, 1});
  t.data()[0] = 3;
  t.data()[1] = 7;
  in.push_back(std::move(t));
  std::vector<Tensor> loss = r.forward(0, std::move(in));
  CHECK(std::isfinite(loss[0].data()[0]));
  r.backward(0, testing::one_tensor(scalar(1.0f)));
}

TEST_CASE("a network holding some layers: the others give their weights back, the held ones are a whole network's") {
  models::ZooOptions z;
  z.layers = 2;
  z.d_model = 32;
  z.heads = 2;
  z.ffn = 64;
  z.seq = 8;
  z.vocab = 512;
  z.batch = 2;
  const models::Model m = models::build_zoo_model("gpt", z);  // input, embedding, 2 blocks, norm, head, loss
  REQUIRE(m.size() == 7);
  Network whole(m, 7);
  const std::vector<bool> held{false, false, true, true, false, false, false};  // the blocks only
  Network part(m, 7, std::vector<Device>(m.size(), Device::cpu()), held);
  int64_t block_bytes = 0;
  for (int i = 0; i < whole.size(); ++i) {
    const auto wp = whole.layer(i).parameters(), pp = part.layer(i).parameters();
    REQUIRE(wp.size() == pp.size());
    CAPTURE(i);
    for (size_t k = 0; k < wp.size(); ++k) {
      if (held[i]) {
        REQUIRE(pp[k]->numel() == wp[k]->numel());
        CHECK(std::equal(wp[k]->data(), wp[k]->data() + wp[k]->numel(), pp[k]->data()));  // the same initial weights
        block_bytes += pp[k]->bytes();
      } else {
        CHECK(pp[k]->numel() == 0);
      }
    }
    for (Tensor* g : part.layer(i).gradients())
      if (!held[i]) CHECK(g->numel() == 0);
  }
  CHECK(block_bytes > 0);
  CHECK(part.parameter_bytes() == block_bytes);
  CHECK(part.parameter_bytes() < whole.parameter_bytes() / 2);  // the token table and head were most of it
  // A tied pair is held whole when either half is.
  z.tied_embeddings = true;
  const models::Model tied = models::build_zoo_model("gpt", z);
  Network tp(tied, 7, std::vector<Device>(tied.size(), Device::cpu()),
             std::vector<bool>{false, true, false, false, false, false, false});
  CHECK(tp.layer(1).parameters().front()->numel() == 512 * 32);
  CHECK(tp.layer(2).parameters().front()->numel() == 0);
}

}  // namespace
}  // namespace pw::exec
