// The CUDA CNN layer kinds (conv2d, max_pool, avg_pool, batch_norm, concat) against the oneDNN
// layers (needs a GPU; see gpu_main.cc): compare_layer's full and ragged micro-batches, plus
// batch_norm with random gamma / beta, statistics groups and its running statistics, and
// B-then-W against W-then-B bit for bit.
#include <doctest/doctest.h>

#include "exec/cuda/layers/cnn_layers.h"
#include "exec/layers/batch_norm.h"
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
using testing::Shape;
using testing::uniform;

models::LayerSpec conv_spec(int64_t in_c, int64_t out_c, int64_t k, int64_t stride, int64_t pad, int64_t h, int64_t w,
                            int64_t groups, int64_t bias) {
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  return spec("conv", LayerKind::conv2d, {"x"}, {out_c, oh, ow},
              {{"in_c", in_c},
               {"out_c", out_c},
               {"kernel", k},
               {"stride", stride},
               {"pad", pad},
               {"in_h", h},
               {"in_w", w},
               {"groups", groups},
               {"bias", bias}});
}

TEST_CASE("cuda conv2d: 3x3 pad 1, strided 7x7 stem, 1x1, grouped, without bias") {
  compare_layer(conv_spec(3, 16, 3, 1, 1, 12, 10, 1, 1), {{3, 12, 10}}, floats({{3, 12, 10}}), {true}, 8, 3);
  compare_layer(conv_spec(3, 8, 7, 2, 3, 32, 32, 1, 0), {{3, 32, 32}}, floats({{3, 32, 32}}), {true}, 4, 3);
  compare_layer(conv_spec(16, 32, 1, 1, 0, 8, 8, 1, 0), {{16, 8, 8}}, floats({{16, 8, 8}}), {true}, 8, 5);
  compare_layer(conv_spec(16, 32, 1, 2, 0, 8, 8, 1, 0), {{16, 8, 8}}, floats({{16, 8, 8}}), {true}, 8, 5);
  compare_layer(conv_spec(8, 12, 3, 2, 1, 9, 9, 4, 1), {{8, 9, 9}}, floats({{8, 9, 9}}), {true}, 6, 1);
}

models::LayerSpec pool_spec(LayerKind kind, int64_t c, int64_t k, int64_t stride, int64_t pad, int64_t h, int64_t w) {
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  return spec("pool", kind, {"x"}, {c, oh, ow},
              {{"c", c}, {"kernel", k}, {"stride", stride}, {"pad", pad}, {"in_h", h}, {"in_w", w}});
}

TEST_CASE("cuda max_pool and avg_pool: overlapping padded windows, tiles, global average") {
  compare_layer(pool_spec(LayerKind::max_pool, 6, 3, 2, 1, 16, 15), {{6, 16, 15}}, floats({{6, 16, 15}}), {true}, 8, 3);
  compare_layer(pool_spec(LayerKind::max_pool, 4, 2, 2, 0, 8, 8), {{4, 8, 8}}, floats({{4, 8, 8}}), {true}, 8, 3);
  compare_layer(pool_spec(LayerKind::avg_pool, 6, 3, 2, 1, 16, 15), {{6, 16, 15}}, floats({{6, 16, 15}}), {true}, 8, 3);
  compare_layer(pool_spec(LayerKind::avg_pool, 32, 4, 4, 0, 4, 4), {{32, 4, 4}}, floats({{32, 4, 4}}), {true}, 8, 3);
}

TEST_CASE("cuda concat: channels of maps and features of vectors") {
  compare_layer(spec("cat", LayerKind::concat, {"a", "b", "c"}, {9, 5, 4}), {{2, 5, 4}, {4, 5, 4}, {3, 5, 4}},
                floats({{2, 5, 4}, {4, 5, 4}, {3, 5, 4}}), {true, true, true}, 8, 3);
  compare_layer(spec("cat", LayerKind::concat, {"a", "b"}, {17}), {{10}, {7}}, floats({{10}, {7}}), {true, true}, 8, 3);
}

TEST_CASE("cuda batch_norm with unit gamma: maps and vectors") {
  compare_layer(spec("bn", LayerKind::batch_norm, {"x"}, {8, 6, 5}, {{"c", 8}}), {{8, 6, 5}}, floats({{8, 6, 5}}),
                {true}, 8, 3);
  compare_layer(spec("bn", LayerKind::batch_norm, {"x"}, {40}, {{"c", 40}}), {{40}}, floats({{40}}), {true}, 16, 5);
}

// Random gamma / beta on both sides, statistics groups (g = 0: the batch; 3 of a batch of 8:
// groups 3, 3, 2), both orders of B and W: outputs, gradients and running statistics.
TEST_CASE("cuda batch_norm: random gamma and beta, statistics groups, running statistics, B and W in either order") {
  CudaDevice& dev = CudaDevice::get(0);
  const Shape sample{6, 5, 7};
  const auto s = spec("bn", LayerKind::batch_norm, {"x"}, sample, {{"c", 6}});
  for (int64_t group : {0, 3}) {
    for (int w_first = 0; w_first < 2; ++w_first) {
      INFO("group " << group << (w_first ? ", W first" : ", B first"));
      auto cpu = make_layer(s, {sample});
      auto gpu = make_layer(s, {sample}, Device::cuda(0));
      cpu->set_statistics_group(group);
      gpu->set_statistics_group(group);
      const Tensor gamma = uniform({6}, 31, 0.5, 1.5), beta = uniform({6}, 32);
      for (int k = 0; k < 2; ++k) {
        const Tensor& v = k == 0 ? gamma : beta;
        std::memcpy(cpu->parameters()[k]->data(), v.data(), static_cast<size_t>(v.bytes()));
        upload(v.data(), *gpu->parameters()[k]);
      }
      for (int step = 0; step < 2; ++step) {  // two micro-batches: the running statistics move twice
        const Tensor x = uniform({8, 6, 5, 7}, 40 + step, -2, 3), dy = uniform({8, 6, 5, 7}, 50 + step);
        const Tensor dx_dev = to_device(x, dev), ddy = to_device(dy, dev);
        std::vector<const Tensor*> hin{&x}, din{&dx_dev};
        Context hc, dc;
        const Tensor hy = cpu->forward(hin, hc);
        testing::expect_close(gpu->forward(din, dc), hy, "forward");
        std::vector<Tensor> hdx, ddx;
        if (w_first) {
          cpu->backward_weight(hin, hc, dy);
          gpu->backward_weight(din, dc, ddy);
        }
        hdx = cpu->backward_input(hin, hc, dy);
        ddx = gpu->backward_input(din, dc, ddy);
        if (!w_first) {
          cpu->backward_weight(hin, hc, dy);
          gpu->backward_weight(din, dc, ddy);
        }
        testing::expect_close(ddx.at(0), hdx.at(0), "B: input gradient");
        for (size_t k = 0; k < 2; ++k)
          testing::expect_close(*gpu->gradients()[k], *cpu->gradients()[k], "W: gradient " + std::to_string(k));
        auto& hbn = dynamic_cast<BatchNorm&>(*cpu);
        auto& dbn = dynamic_cast<CudaBatchNorm&>(*gpu);
        testing::expect_close(dbn.running_mean(), hbn.running_mean(), "running mean");
        testing::expect_close(dbn.running_var(), hbn.running_var(), "running variance");
      }
    }
  }
}

TEST_CASE("cuda conv2d and batch_norm: B then W equals W then B, bit for bit") {
  check_b_w_order(conv_spec(4, 8, 3, 2, 1, 9, 9, 2, 1), {4, 9, 9}, 3);
  check_b_w_order(spec("bn", LayerKind::batch_norm, {"x"}, {8, 6, 5}, {{"c", 8}}), {8, 6, 5}, 5);
}

}  // namespace
}  // namespace pw::exec::cuda
