// The CUDA CNN layers' host-side logic (exec/cuda/cnn_index.h, conv_plan.h), without a GPU:
// the window index math by hand-checked cases, the chunking and statistics groups by exact
// values, and the whole explicit-GEMM convolution and the pooling element functions, run on the
// host in a loop (the kernels' bodies) with a reference of GemmShape's semantics, against the
// oneDNN conv2d and pooling layers: forward, B and W, with groups, stride, padding and chunks.
#include "exec/cuda/conv_plan.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "exec/cuda/cnn_index.h"
#include "exec/layers/common.h"
#include "tests/exec/layers/grad_check.h"

namespace pw::exec::cuda {
namespace {

using models::LayerKind;
using pw::exec::testing::random_tensor;
using pw::exec::testing::spec;

TEST_CASE("window index math: output size and the windows covering an input position") {
  CHECK(window_outputs(7, 3, 2, 1) == 4);  // (7 + 2 - 3) / 2 + 1
  CHECK(window_outputs(4, 4, 4, 0) == 1);
  // kernel 3, stride 2, pad 1, 4 outputs: output o reads 2o - 1 .. 2o + 1.
  WindowRange r = covering_windows(0, 3, 2, 1, 4);
  CHECK((r.first == 0 && r.last == 0));
  r = covering_windows(1, 3, 2, 1, 4);
  CHECK((r.first == 0 && r.last == 1));
  r = covering_windows(6, 3, 2, 1, 4);
  CHECK((r.first == 3 && r.last == 3));
  // stride 1, kernel 1: exactly the same position.
  r = covering_windows(5, 1, 1, 0, 8);
  CHECK((r.first == 5 && r.last == 5));
  // a position no window reaches (kernel 1, stride 2, odd position): empty.
  r = covering_windows(3, 1, 2, 0, 4);
  CHECK(r.first > r.last);
  CHECK(channels_first_index(0, 3, 2, 4) == 0);
  CHECK(channels_first_index(4, 3, 2, 4) == 8);  // (s 0, o 1, p 0) -> row 1 of 2 samples x 4
  CHECK(channels_first_index(1 * 12 + 2 * 4 + 3, 3, 2, 4) == (2 * 2 + 1) * 4 + 3);  // (s 1, o 2, p 3)
}

TEST_CASE("conv chunks and batch_norm statistics groups") {
  ConvGeometry g;
  g.in_c = 4;
  g.out_c = 6;
  g.kernel = 3;
  g.pad = 1;
  g.in_h = g.in_w = 8;
  // per sample: (36 col rows + 6 output channels) * 64 pixels * 4 bytes = 10752
  CHECK(conv_chunk_samples(g, 16, 10752 * 5) == 5);
  CHECK(conv_chunk_samples(g, 3, 10752 * 5) == 3);
  CHECK(conv_chunk_samples(g, 16, 100) == 1);
  StatGroups s = stat_groups(10, 4);
  CHECK((s.size == 4 && s.count == 3));
  s = stat_groups(10, 0);
  CHECK((s.size == 10 && s.count == 1));
  s = stat_groups(3, 8);
  CHECK((s.size == 3 && s.count == 1));
}

// C = op(A)·op(B) + beta C per group, packed, as gemm.h defines it (double sums).
void reference_gemm(const GemmShape& s, const float* a, const float* b, float* c, float beta) {
  REQUIRE(gemm_shape_problem(s).empty());
  REQUIRE(s.batch == 1);
  for (int64_t g = 0; g < s.groups; ++g) {
    const float* ag = a + g * s.group_stride_a;
    const float* bg = b + g * s.group_stride_b;
    float* cg = c + g * s.group_stride_c;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < s.k; ++k)
          acc +=
              double(s.trans_a ? ag[k * s.m + i] : ag[i * s.k + k]) * (s.trans_b ? bg[j * s.k + k] : bg[k * s.n + j]);
        cg[i * s.n + j] = static_cast<float>(acc + beta * cg[i * s.n + j]);
      }
  }
}

double rel(const Tensor& got, const Tensor& want) {
  REQUIRE(got.numel() == want.numel());
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    num += std::pow(double(got.data()[i]) - want.data()[i], 2);
    den += std::pow(double(want.data()[i]), 2);
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

// The CudaConv2d algorithm (exec/cuda/layers/conv.cc) on the host, chunk by chunk.
void check_conv(const ConvGeometry& g, int64_t batch, int64_t budget) {
  INFO("conv in_c " << g.in_c << " out_c " << g.out_c << " k " << g.kernel << " stride " << g.stride << " pad " << g.pad
                    << " groups " << g.groups << " batch " << batch);
  const int64_t P = g.pixels(), in_n = g.in_c * g.in_h * g.in_w;
  auto cpu = make_layer(spec("c", LayerKind::conv2d, {"x"}, {g.out_c, g.out_h(), g.out_w()},
                             {{"in_c", g.in_c},
                              {"out_c", g.out_c},
                              {"kernel", g.kernel},
                              {"stride", g.stride},
                              {"pad", g.pad},
                              {"in_h", g.in_h},
                              {"in_w", g.in_w},
                              {"groups", g.groups}}),
                        {{g.in_c, g.in_h, g.in_w}});
  cpu->init_parameters(3);
  Tensor& w = *cpu->parameters()[0];
  Tensor& bias = *cpu->parameters()[1];
  for (int64_t o = 0; o < g.out_c; ++o) bias.data()[o] = 0.1f * static_cast<float>(o);
  const Tensor x = random_tensor({batch, g.in_c, g.in_h, g.in_w}, 11);
  const Tensor dy = random_tensor({batch, g.out_c, g.out_h(), g.out_w()}, 12);
  std::vector<const Tensor*> in{&x};
  Context ctx;
  const Tensor want_y = cpu->forward(in, ctx);
  cpu->zero_grad();
  const Tensor want_dx = std::move(cpu->backward(in, ctx, dy)[0]);

  Window2d win{g.in_c, g.in_h, g.in_w, g.kernel, g.stride, g.pad};
  const int64_t chunk = conv_chunk_samples(g, batch, budget);
  Tensor y(want_y.shape()), dx(x.shape()), gw = Tensor::zeros(w.shape()), gb = Tensor::zeros({g.out_c});
  std::vector<float> col(g.col_rows() * chunk * P), cf(g.out_c * chunk * P);
  int chunks = 0;
  for (int64_t s0 = 0; s0 < batch; s0 += chunk, ++chunks) {
    const int64_t s = std::min(chunk, batch - s0), n_col = g.col_rows() * s * P, n_out = g.out_c * s * P;
    for (int64_t i = 0; i < n_col; ++i) col[i] = im2col_element(x.data() + s0 * in_n, win, s, i);
    reference_gemm(conv_forward_gemm(g, s), w.data(), col.data(), cf.data(), 0.0f);
    for (int64_t i = 0; i < n_out; ++i)
      y.data()[s0 * g.out_c * P + i] = cf[channels_first_index(i, g.out_c, s, P)] + bias.data()[(i / P) % g.out_c];
    // W: dY channels first, gW += dY·colᵀ, gb += row sums.
    for (int64_t i = 0; i < n_out; ++i) cf[channels_first_index(i, g.out_c, s, P)] = dy.data()[s0 * g.out_c * P + i];
    reference_gemm(conv_weight_gemm(g, s), cf.data(), col.data(), gw.data(), 1.0f);
    for (int64_t o = 0; o < g.out_c; ++o)
      for (int64_t j = 0; j < s * P; ++j) gb.data()[o] += cf[o * s * P + j];
    // B: dcol = Wᵀ·dY, then the gather.
    reference_gemm(conv_data_gemm(g, s), w.data(), cf.data(), col.data(), 0.0f);
    for (int64_t i = 0; i < s * in_n; ++i) dx.data()[s0 * in_n + i] = col2im_element(col.data(), win, s, i);
  }
  CHECK(chunks == (batch + chunk - 1) / chunk);
  CHECK(rel(y, want_y) < 1e-5);
  CHECK(rel(dx, want_dx) < 1e-5);
  CHECK(rel(gw, *cpu->gradients()[0]) < 1e-5);
  CHECK(rel(gb, *cpu->gradients()[1]) < 1e-5);
}

TEST_CASE("conv2d as explicit GEMM chunks on the host equals the oneDNN conv2d in F and B and W") {
  auto geom = [](int64_t in_c, int64_t out_c, int64_t k, int64_t stride, int64_t pad, int64_t h, int64_t w,
                 int64_t groups) {
    ConvGeometry g;
    g.in_c = in_c;
    g.out_c = out_c;
    g.kernel = k;
    g.stride = stride;
    g.pad = pad;
    g.in_h = h;
    g.in_w = w;
    g.groups = groups;
    return g;
  };
  check_conv(geom(3, 8, 3, 1, 1, 9, 7, 1), 5, kConvScratchBytes);    // one chunk
  check_conv(geom(4, 6, 3, 2, 1, 9, 9, 2), 5, 1);                    // a chunk per sample, groups
  check_conv(geom(8, 8, 1, 1, 0, 5, 5, 1), 4, 3000);                 // 1x1, chunks of 2
  check_conv(geom(2, 4, 7, 2, 3, 16, 15, 1), 3, kConvScratchBytes);  // the ResNet stem's window
  check_conv(geom(6, 6, 3, 1, 1, 6, 6, 6), 3, kConvScratchBytes);    // depthwise
}

void check_pool(bool max, int64_t c, int64_t k, int64_t stride, int64_t pad, int64_t h, int64_t w, int64_t batch) {
  INFO((max ? "max" : "avg") << " pool k " << k << " stride " << stride << " pad " << pad << " map " << h << "x" << w);
  const Window2d win{c, h, w, k, stride, pad};
  auto cpu = make_layer(spec("p", max ? LayerKind::max_pool : LayerKind::avg_pool, {"x"}, {c, win.out_h(), win.out_w()},
                             {{"c", c}, {"kernel", k}, {"stride", stride}, {"pad", pad}, {"in_h", h}, {"in_w", w}}),
                        {{c, h, w}});
  const Tensor x = random_tensor({batch, c, h, w}, 21);
  const Tensor dy = random_tensor({batch, c, win.out_h(), win.out_w()}, 22);
  std::vector<const Tensor*> in{&x};
  Context ctx;
  const Tensor want_y = cpu->forward(in, ctx);
  const Tensor want_dx = std::move(cpu->backward_input(in, ctx, dy)[0]);
  Tensor y(want_y.shape()), arg(want_y.shape()), dx(x.shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t at = -1;
    y.data()[i] = max ? max_pool_element(x.data(), win, i, &at) : avg_pool_element(x.data(), win, i);
    arg.data()[i] = static_cast<float>(at);
  }
  for (int64_t i = 0; i < dx.numel(); ++i)
    dx.data()[i] = pool_grad_element(dy.data(), max ? arg.data() : nullptr, win, i);
  CHECK(rel(y, want_y) < 1e-6);
  CHECK(rel(dx, want_dx) < 1e-6);
}

TEST_CASE("pooling element functions on the host equal the oneDNN max and avg pooling in F and B") {
  check_pool(true, 3, 3, 2, 1, 9, 8, 2);  // the ResNet max pool's window, overlapping
  check_pool(true, 2, 2, 2, 0, 6, 6, 3);
  check_pool(false, 3, 3, 2, 1, 9, 8, 2);  // average including padding
  check_pool(false, 4, 5, 5, 0, 5, 5, 2);  // global average
  check_pool(false, 2, 3, 1, 1, 5, 4, 2);
}

}  // namespace
}  // namespace pw::exec::cuda
