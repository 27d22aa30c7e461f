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
using testing::check_b_w_order;
using testing::compare_layer;
using testing::floats;
using testing::integers;
using testing::Shape;
using testing::uniform;

TEST_CASE("cuda linear: 2-D and 3-D inputs, with and without bias") {
  compare_layer(spec("fc", LayerKind::linear, {"x"}, {37}, {{"in", 53}, {"out", 37}}), {{53}}, floats({{53}}), {true},
                16, 5);
  compare_layer(spec("fc", LayerKind::linear, {"x"}, {7, 64}, {{"in", 32}, {"out", 64}, {"bias", 0}}), {{7, 32}},
                floats({{7, 32}}), {true}, 8, 3);
}

// Bias and layer-norm gradients sum over rows in chunks of 256 (exec/cuda/column_chunks.h):
// 800 rows (4 chunks, the last partial) and, ragged, 300 rows (2 chunks).
TEST_CASE("cuda linear and layer_norm: rows over several chunks of the column reductions") {
  compare_layer(spec("fc", LayerKind::linear, {"x"}, {100, 48}, {{"in", 40}, {"out", 48}}), {{100, 40}},
                floats({{100, 40}}), {true}, 8, 3);
  compare_layer(spec("ln", LayerKind::layer_norm, {"x"}, {100, 96}, {{"dim", 96}}), {{100, 96}}, floats({{100, 96}}),
                {true}, 8, 3);
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

TEST_CASE("cuda embedding: ids over several tiles of the gradient kernel (600 rows, 37 ids)") {
  auto ids = [](size_t, int64_t batch, uint64_t seed) { return integers({batch, 75}, seed, 37); };
  compare_layer(spec("emb", LayerKind::embedding, {"input"}, {75, 24}, {{"vocab", 37}, {"seq", 75}, {"d_model", 24}}),
                {{75}}, ids, {false}, 8, 3);
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

// Attention chains several fp32 products and a softmax whose exp differs from the CPU's
// polynomial by < 2e-7; the block adds two layer norms and two more products. Summation orders
// differ from oneDNN's, so the tolerances are above the single layers' 1e-5 (an indexing error
// shows as an error of order 1).
constexpr double kAttentionTol = 5e-5, kBlockTol = 1e-4;

models::LayerSpec attention_spec(int64_t seq, int64_t d, int64_t heads) {
  return spec("attn", LayerKind::attention, {"x"}, {seq, d}, {{"seq", seq}, {"d_model", d}, {"heads", heads}});
}

models::LayerSpec block_spec(int64_t seq, int64_t d, int64_t heads, int64_t ffn) {
  return spec("block", LayerKind::transformer_block, {"x"}, {seq, d},
              {{"seq", seq}, {"d_model", d}, {"heads", heads}, {"ffn", ffn}});
}

TEST_CASE("cuda attention (seq 7, d 32, heads 4 and seq 16, d 64, heads 2)") {
  compare_layer(attention_spec(7, 32, 4), {{7, 32}}, floats({{7, 32}}), {true}, 8, 3, kAttentionTol);
  compare_layer(attention_spec(16, 64, 2), {{16, 64}}, floats({{16, 64}}), {true}, 4, 3, kAttentionTol);
}

TEST_CASE("cuda transformer_block (seq 7, d 32, heads 4, ffn 64 and seq 16, d 64, heads 2, ffn 128 and seq 64)") {
  compare_layer(block_spec(7, 32, 4, 64), {{7, 32}}, floats({{7, 32}}), {true}, 8, 3, kBlockTol);
  compare_layer(block_spec(16, 64, 2, 128), {{16, 64}}, floats({{16, 64}}), {true}, 4, 3, kBlockTol);
  // 512 rows: the bias and layer-norm gradients in 2 chunks (the ragged 192 rows in one).
  compare_layer(block_spec(64, 32, 4, 64), {{64, 32}}, floats({{64, 32}}), {true}, 8, 3, kBlockTol);
}

TEST_CASE("cuda attention and transformer_block: B then W equals W then B, bit for bit") {
  check_b_w_order(attention_spec(7, 32, 4), {7, 32}, 3);
  check_b_w_order(block_spec(7, 32, 4, 64), {7, 32}, 3);
  check_b_w_order(block_spec(64, 32, 4, 64), {64, 32}, 5);  // 320 rows: 2 chunks
}

TEST_CASE("cuda factory: a kind without a CUDA layer is refused by name, and inputs on the host are refused") {
  CHECK_THROWS_WITH_AS(make_layer(spec("o", LayerKind::opaque, {"x"}, {4}), {{4}}, Device::cuda(0)),
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
