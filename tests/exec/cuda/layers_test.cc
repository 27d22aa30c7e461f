// Every CUDA layer kind against the oneDNN layer (needs a GPU; see gpu_main.cc).
#include <doctest/doctest.h>

#include "exec/cuda/layers/cuda_layer.h"
#include "models/error.h"
#include "tests/exec/cuda/gpu_compare.h"
#include "tests/exec/layers/grad_check.h"

namespace pw::exec::cuda {
namespace {

using models::LayerKind;
using pw::exec::testing::spec;
using testing::compare_layer;
using testing::integers;
using testing::Shape;
using testing::uniform;

testing::InputMaker floats(std::vector<Shape> per_sample) {
  return [per_sample](size_t k, int64_t batch, uint64_t seed) {
    Shape s{batch};
    s.insert(s.end(), per_sample.at(k).begin(), per_sample.at(k).end());
    return uniform(s, seed);
  };
}

TEST_CASE("cuda linear: 2-D and 3-D inputs, with and without bias") {
  compare_layer(spec("fc", LayerKind::linear, {"x"}, {37}, {{"in", 53}, {"out", 37}}), {{53}}, floats({{53}}), {true},
                16, 5);
  compare_layer(spec("fc", LayerKind::linear, {"x"}, {7, 64}, {{"in", 32}, {"out", 64}, {"bias", 0}}), {{7, 32}},
                floats({{7, 32}}), {true}, 8, 3);
}

TEST_CASE("cuda lm_head") {
  compare_layer(spec("head", LayerKind::lm_head, {"x"}, {6, 101}, {{"seq", 6}, {"d_model", 24}, {"vocab", 101}}),
                {{6, 24}}, floats({{6, 24}}), {true}, 4, 3);
}

TEST_CASE("cuda relu and gelu") {
  compare_layer(spec("r", LayerKind::relu, {"x"}, {5, 33}), {{5, 33}}, floats({{5, 33}}), {true}, 8, 3);
  compare_layer(spec("g", LayerKind::gelu, {"x"}, {5, 33}), {{5, 33}}, floats({{5, 33}}), {true}, 8, 3);
}

TEST_CASE("cuda layer_norm (d 96 and d 1000)") {
  compare_layer(spec("ln", LayerKind::layer_norm, {"x"}, {4, 96}, {{"dim", 96}}), {{4, 96}}, floats({{4, 96}}), {true},
                8, 3);
  compare_layer(spec("ln", LayerKind::layer_norm, {"x"}, {1000}, {{"dim", 1000}}), {{1000}}, floats({{1000}}), {true},
                16, 7);
}

TEST_CASE("cuda residual_add, flatten, input") {
  compare_layer(spec("add", LayerKind::residual_add, {"a", "b"}, {3, 20}), {{3, 20}, {3, 20}},
                floats({{3, 20}, {3, 20}}), {true, true}, 8, 3);
  compare_layer(spec("flat", LayerKind::flatten, {"x"}, {24}), {{2, 3, 4}}, floats({{2, 3, 4}}), {true}, 8, 3);
  auto in = spec("input", LayerKind::input, {}, {12});
  compare_layer(in, {}, floats({{12}}), {false}, 8, 3);
}

TEST_CASE("cuda embedding (repeated ids)") {
  auto ids = [](size_t, int64_t batch, uint64_t seed) { return integers({batch, 9}, seed, 13); };
  compare_layer(spec("emb", LayerKind::embedding, {"input"}, {9, 16}, {{"vocab", 13}, {"seq", 9}, {"d_model", 16}}),
                {{9}}, ids, {false}, 8, 3);
}

TEST_CASE("cuda softmax_xent (rows 5, classes 257) and mse_loss") {
  auto xent_in = [](size_t k, int64_t batch, uint64_t seed) {
    return k == 0 ? uniform({batch, 5, 257}, seed, -4, 4) : integers({batch, 5}, seed, 257);
  };
  compare_layer(spec("loss", LayerKind::softmax_xent, {"x"}, {1}, {{"rows", 5}, {"classes", 257}}), {{5, 257}}, xent_in,
                {true, false}, 8, 3);
  compare_layer(spec("mse", LayerKind::mse_loss, {"x"}, {1}, {{"dim", 30}}), {{30}}, floats({{30}, {30}}),
                {true, false}, 8, 3);
}

TEST_CASE("cuda dropout: the CPU's masks") {
  compare_layer(spec("drop", LayerKind::dropout, {"x"}, {7, 50}, {{"permille", 300}}), {{7, 50}}, floats({{7, 50}}),
                {true}, 8, 3);
}

TEST_CASE("cuda factory: a kind without a CUDA layer is refused by name, and inputs on the host are refused") {
  CHECK_THROWS_WITH_AS(
      make_layer(spec("c", LayerKind::conv2d, {"x"}, {2, 4, 4},
                      {{"in_c", 1}, {"out_c", 2}, {"kernel", 3}, {"pad", 1}, {"in_h", 4}, {"in_w", 4}}),
                 {{1, 4, 4}}, Device::cuda(0)),
      doctest::Contains("does not run this layer kind yet"), InputError);
  auto l = make_layer(spec("r", LayerKind::relu, {"x"}, {4}), {{4}}, Device::cuda(0));
  Tensor host({2, 4});
  host.fill(1.0f);
  std::vector<const Tensor*> in{&host};
  Context ctx;
  CHECK_THROWS_WITH_AS(l->forward(in, ctx), doctest::Contains("is on cpu, expected cuda:0"), InputError);
}

}  // namespace
}  // namespace pw::exec::cuda
