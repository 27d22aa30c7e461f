#include "models/transformer_cost.h"

#include <doctest/doctest.h>

#include "models/cost.h"
#include "models/zoo.h"

using namespace pw::models;

namespace {

BlockShape small_block() {
  BlockShape b;
  b.batch = 2;
  b.seq = 8;
  b.d_model = 16;
  b.heads = 4;
  b.ffn = 64;
  return b;
}

}  // namespace

TEST_CASE("transformer cost: the block's products, as Megatron-LM runs them") {
  BlockShape b = small_block();
  b.tp = 2;
  const PassGemms g = block_gemms(b);
  // QKV, projection, MLP up and down; then the scores and context per local head.
  REQUIRE(g.fwd.size() == 6);
  CHECK(g.fwd[0].m == 16);  // b s rows
  CHECK(g.fwd[0].n == 24);  // 3h / t
  CHECK(g.fwd[0].k == 16);
  CHECK(g.fwd[1].k == 8);   // h / t
  CHECK(g.fwd[2].n == 32);  // f / t
  CHECK(g.fwd[4].m == 8);   // s x s x d, b a / t = 4 of them
  CHECK(g.fwd[4].k == 4);
  CHECK(g.fwd[4].count == 4);
  REQUIRE(g.bin.size() == 6);
  CHECK(g.bin[4].count == 12);  // dQ, dK, dV
  REQUIRE(g.bw.size() == 4);    // weight gradients of the four weight products
  CHECK(g.bw[0].m == 16);       // (k, n, m) of QKV's (16, 24, 16)
  CHECK(g.bw[0].k == 16);
  // The attention kind alone: QKV and projection only.
  b.mlp = false;
  CHECK(block_gemms(b).fwd.size() == 4);
}

TEST_CASE("transformer cost: memory-bound kernel bytes by hand, with and without Megatron's kernels") {
  const BlockShape b = small_block();
  // b s h = 256, b s f = 1024, b a s^2 = 512; e = 2.
  const PassSeconds plain = block_kernel_bytes(b, BlockKernels{}, 2);
  // F: softmax 4 x 512; layer norms 2 x 4 and residual adds 2 x 6 over 256; GeLU 4 x 1024.
  CHECK(plain.f == 4 * 512 + (8 + 12) * 256 + 4 * 1024);
  // B: softmax 6 x 512; layer norms 2 x 6 and residual sums 2 x 6 over 256; GeLU 6 x 1024.
  CHECK(plain.b == 6 * 512 + 24 * 256 + 6 * 1024);
  CHECK(plain.w == 0);
  const PassSeconds mega = block_kernel_bytes(b, kMegatronKernels, 2);
  // SC'21's counts: F 22 per b s h (bias-dropout-adds 7), 4 per MLP element, 9 per score;
  // B 34, 6, 11; W 10 bytes per parameter (12 h^2 + 13 h with f = 4h).
  CHECK(mega.f == 22 * 256 + 4 * 1024 + 9 * 512);
  CHECK(mega.b == 34 * 256 + 6 * 1024 + 11 * 512);
  CHECK(mega.w == 10 * (12.0 * 16 * 16 + 13 * 16));
  // Sequence parallelism divides the b s h kernels by t, the others are split anyway.
  BlockShape sp = b;
  sp.tp = 2;
  sp.sequence_parallel = true;
  CHECK(block_kernel_bytes(sp, BlockKernels{}, 2).f == 4 * 256 + (8 + 12) * 128 + 4 * 512);
}

TEST_CASE("transformer cost: seconds are the products on the curve plus the kernels at achieved bandwidth") {
  const DeviceSpec& a100 = find_device("a100-80g");
  const BlockShape b = small_block();
  const PassGemms g = block_gemms(b);
  const PassSeconds bytes = block_kernel_bytes(b, kMegatronKernels, 2);
  const PassSeconds t = block_seconds(a100, b, kMegatronKernels, 2);
  const double bw = 0.9 * 2039e9;
  CHECK(t.f == doctest::Approx(total_gemm_seconds(a100, g.fwd) + bytes.f / bw).epsilon(1e-12));
  CHECK(t.b == doctest::Approx(total_gemm_seconds(a100, g.bin) + bytes.b / bw).epsilon(1e-12));
  CHECK(t.w == doctest::Approx(total_gemm_seconds(a100, g.bw) + bytes.w / bw).epsilon(1e-12));
  CHECK_THROWS(block_seconds(find_device("p100-16g"), b, BlockKernels{}, 2));  // no measured ceiling
}

TEST_CASE("transformer cost: the analytic profile prices a GPT block on the curve by this model") {
  ZooOptions zo;
  zo.layers = 2;
  zo.d_model = 256;
  zo.heads = 8;
  zo.seq = 128;
  zo.vocab = 1000;
  const Model gpt = build_zoo_model("gpt", zo);
  const DeviceSpec& h100 = find_device("h100-80g");
  CostOptions co;
  co.bf16 = true;
  co.efficiency = 0;
  const Profile p = analytic_profile(gpt, h100, 4, co);
  const LayerSpec* block = nullptr;
  for (const LayerSpec& l : gpt.layers())
    if (l.kind == LayerKind::transformer_block) block = &l;
  REQUIRE(block != nullptr);
  BlockShape b;
  b.batch = 4;
  b.seq = 128;
  b.d_model = 256;
  b.heads = 8;
  b.ffn = double(block->attr("ffn"));
  const PassSeconds t = block_seconds(h100, b, BlockKernels{}, 2);
  const LayerProfile& lp = p.layers[p.index_of(block->name)];
  CHECK(lp.forward_ns == std::llround(t.f * 1e9));
  CHECK(lp.backward_input_ns == std::llround(t.b * 1e9));
  CHECK(lp.backward_weight_ns == std::llround(t.w * 1e9));
  // A constant efficiency keeps the roofline: not this model.
  co.efficiency = 0.5;
  CHECK(analytic_profile(gpt, h100, 4, co).layers[p.index_of(block->name)].forward_ns != lp.forward_ns);
}
