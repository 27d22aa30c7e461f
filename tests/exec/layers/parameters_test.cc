// What parameters() and gradients() list: every layer's own tensors in a fixed order (the order
// checkpoints and optimizers rely on), composite layers their parts' in part order, a tied
// head only its bias.
#include <doctest/doctest.h>

#include "exec/layer.h"
#include "exec/layers/linear.h"
#include "tests/exec/layers/grad_check.h"

namespace pw::exec {
namespace {

using models::LayerKind;
using testing::spec;

std::vector<std::vector<int64_t>> shapes_of(const std::vector<Tensor*>& ts) {
  std::vector<std::vector<int64_t>> s;
  for (const Tensor* t : ts) s.push_back(t->shape());
  return s;
}

TEST_CASE("parameters: leaf layers list weight then bias, gradients alike, shapes equal") {
  auto fc = make_layer(spec("fc", LayerKind::linear, {"x"}, {5}, {{"in", 7}, {"out", 5}}), {{7}});
  CHECK(shapes_of(fc->parameters()) == std::vector<std::vector<int64_t>>{{5, 7}, {5}});
  CHECK(shapes_of(fc->gradients()) == shapes_of(fc->parameters()));
  CHECK(fc->parameter_bytes() == (35 + 5) * 4);
  auto ln = make_layer(spec("ln", LayerKind::layer_norm, {"x"}, {3, 8}, {{"dim", 8}}), {{3, 8}});
  CHECK(shapes_of(ln->parameters()) == std::vector<std::vector<int64_t>>{{8}, {8}});
  for (Tensor* g : ln->gradients()) g->fill(1.0f);
  ln->zero_grad();
  for (Tensor* g : ln->gradients()) CHECK(g->data()[0] == 0.0f);
}

TEST_CASE("parameters: a transformer block lists ln1, attention (qkv, proj), ln2, fc1, fc2") {
  auto b = make_layer(
      spec("blk", LayerKind::transformer_block, {"x"}, {4, 8}, {{"d_model", 8}, {"heads", 2}, {"ffn", 16}, {"seq", 4}}),
      {{4, 8}});
  const std::vector<std::vector<int64_t>> want{{8}, {8}, {24, 8}, {24}, {8, 8},  {8},
                                               {8}, {8}, {16, 8}, {16}, {8, 16}, {8}};
  CHECK(shapes_of(b->parameters()) == want);
  CHECK(shapes_of(b->gradients()) == want);
  const auto p = b->parameters(), g = b->gradients();
  for (size_t i = 0; i < p.size(); ++i) CHECK(p[i] != g[i]);
}

TEST_CASE("parameters: a head that shares another layer's weight lists only its bias") {
  Linear head(spec("head", LayerKind::linear, {"x"}, {6}, {{"in", 4}, {"out", 6}}), 4, 6, true);
  Tensor table = Tensor::zeros({6, 4}), table_grad = Tensor::zeros({6, 4});
  head.share_weight(&table, &table_grad);
  CHECK(shapes_of(head.parameters()) == std::vector<std::vector<int64_t>>{{6}});
  CHECK(shapes_of(head.gradients()) == std::vector<std::vector<int64_t>>{{6}});
  CHECK(head.has_weight_grad());
}

}  // namespace
}  // namespace pw::exec
