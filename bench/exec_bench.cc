// pw_bench_exec: kernel efficiency of the oneDNN layers against a bare oneDNN matmul measured in
// the same run (acceptance: linear fwd+bwd >= 70%, GPT block fwd+bwd >= 50% of the matmul rate).
// Counters: "flops" as a rate (FLOP/s). Run: pw_bench_exec --benchmark_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "bench/bare_conv.h"
#include "bench/bare_matmul.h"
#include "exec/data/data.h"
#include "exec/layer.h"
#include "exec/layers/common.h"
#include "exec/layers/network.h"
#include "exec/numerics.h"
#include "exec/optimizer.h"
#include "exec/profile/profiler.h"
#include "exec/runtime/checkpoint.h"
#include "models/zoo.h"

namespace {

using namespace pw::exec;

Tensor random(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(std::move(shape));
  Rng r(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(r.uniform() - 0.5);
  return t;
}

pw::models::LayerSpec spec(pw::models::LayerKind kind, std::vector<int64_t> out, std::map<std::string, int64_t> attrs) {
  return pw::models::LayerSpec{"bench", kind, {"x"}, std::move(out), std::move(attrs)};
}

// F + B + W of `l` on `x` (output gradient `dy`), once per benchmark iteration.
void time_fwd_bwd(benchmark::State& state, Layer& l, const Tensor& x, const Tensor& dy) {
  const Tensor* in[] = {&x};
  for (auto _ : state) {
    Context ctx;
    Tensor y = l.forward(in, ctx);
    auto dx = l.backward_input(in, ctx, dy);
    l.backward_weight(in, ctx, dy);
    benchmark::DoNotOptimize(dx[0].data());
  }
}

// M=256, K=N=1024; arg 1: weights stored transposed ("ba"), 0: "ab".
void BM_BareMatmul(benchmark::State& state) {
  const int64_t m = 256, k = 1024, n = 1024;
  BareMatmul mm(m, k, n, state.range(0) == 1);
  Tensor a = random({m, k}, 1), b = random({k, n}, 2), c({m, n});
  for (auto _ : state) {
    mm.run(a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(state.range(0) == 1 ? "weights ba" : "weights ab");
}
BENCHMARK(BM_BareMatmul)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

// linear 1024 -> 1024 at batch 256: F + B + W (3 matmuls of 2*M*K*N each).
void BM_LinearFwdBwd(benchmark::State& state) {
  const int64_t m = 256, k = 1024, n = 1024;
  auto l = make_layer(spec(pw::models::LayerKind::linear, {n}, {{"in", k}, {"out", n}}), {{k}});
  l->init_parameters(1);
  Tensor x = random({m, k}, 3), dy = random({m, n}, 4);
  time_fwd_bwd(state, *l, x, dy);
  state.counters["flops"] = benchmark::Counter(3 * 2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LinearFwdBwd)->UseRealTime()->Unit(benchmark::kMillisecond);

// One GPT block, d_model 512, seq 256, 8 heads, ffn 2048, micro-batch 1: F + B + W.
// FLOPs: 3 x forward; forward = 2*s*(4d^2 + 2df) (projections, MLP) + 4*s^2*d (scores, mix;
// counted dense although the mask makes half of it zero).
void BM_GptBlockFwdBwd(benchmark::State& state) {
  const int64_t s = 256, d = 512, f = 2048, b = state.range(0);
  auto l = make_layer(
      spec(pw::models::LayerKind::transformer_block, {s, d}, {{"seq", s}, {"d_model", d}, {"heads", 8}, {"ffn", f}}),
      {{s, d}});
  l->init_parameters(1);
  Tensor x = random({b, s, d}, 5), dy = random({b, s, d}, 6);
  time_fwd_bwd(state, *l, x, dy);
  const double fwd = 2.0 * s * (4.0 * d * d + 2.0 * d * f) + 4.0 * s * s * d;
  state.counters["flops"] = benchmark::Counter(3 * fwd * b, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GptBlockFwdBwd)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// The GPT block's parts at its shapes (batch 1, seq 256, d_model 512, 8 heads, ffn 2048), F + B + W
// each, to see where the block's time goes. "flops" counts the matmul FLOPs only (attention:
// qkv + out projections and the dense score/mix products); the others report time only.
void run_part(benchmark::State& state, const pw::models::LayerSpec& sp, std::vector<int64_t> in_shape, double flops) {
  auto l = make_layer(sp, {in_shape});
  l->init_parameters(1);
  std::vector<int64_t> shape{1};
  shape.insert(shape.end(), in_shape.begin(), in_shape.end());
  std::vector<int64_t> out_shape{1};
  out_shape.insert(out_shape.end(), sp.output_shape.begin(), sp.output_shape.end());
  Tensor x = random(shape, 7), dy = random(out_shape, 8);
  time_fwd_bwd(state, *l, x, dy);
  if (flops > 0) state.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_BlockPartAttention(benchmark::State& state) {
  const int64_t s = 256, d = 512;
  run_part(state, spec(pw::models::LayerKind::attention, {s, d}, {{"seq", s}, {"d_model", d}, {"heads", 8}}), {s, d},
           3 * (2.0 * s * 4.0 * d * d + 4.0 * s * s * d));
}
void BM_BlockPartFc1(benchmark::State& state) {
  const int64_t s = 256, d = 512, f = 2048;
  run_part(state, spec(pw::models::LayerKind::linear, {s, f}, {{"in", d}, {"out", f}}), {s, d}, 3 * 2.0 * s * d * f);
}
void BM_BlockPartGelu(benchmark::State& state) {
  run_part(state, spec(pw::models::LayerKind::gelu, {256, 2048}, {}), {256, 2048}, 0);
}
void BM_BlockPartLayerNorm(benchmark::State& state) {
  run_part(state, spec(pw::models::LayerKind::layer_norm, {256, 512}, {{"dim", 512}}), {256, 512}, 0);
}
BENCHMARK(BM_BlockPartAttention)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockPartFc1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockPartGelu)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockPartLayerNorm)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Run-to-run stability of the measuring profiler (was a pass/fail test; timing lives here).
// Two profiles of an mlp 1024x2 at micro-batch 128, one thread on its CPU clock; counters:
// "max_rel_diff" and "median_rel_diff" over the F/B/W times longer than 1 ms (quiet machine: < 0.10).
void BM_ProfilerStability(benchmark::State& state) {
  pw::models::ZooOptions z;
  z.width = 1024;
  z.depth = 2;
  z.batch = 8;
  const pw::models::Model m = pw::models::build_zoo_model("mlp", z);
  MeasureOptions o;
  o.micro_batch = 128;
  o.reps = 9;
  o.warmup = 2;
  o.threads = 1;
  o.thread_cpu_time = true;
  std::vector<double> diffs;
  for (auto _ : state) {
    const pw::models::Profile a = measure_profile(m, o), b = measure_profile(m, o);
    for (size_t i = 0; i < a.layers.size(); ++i) {
      const auto& la = a.layers[i];
      const auto& lb = b.layers[i];
      for (auto [x, y] :
           {std::pair{la.forward_ns, lb.forward_ns}, std::pair{la.backward_input_ns, lb.backward_input_ns},
            std::pair{la.backward_weight_ns, lb.backward_weight_ns}}) {
        if (std::min(x, y) < 1'000'000) continue;
        diffs.push_back(std::abs(double(x) - double(y)) / double(std::max(x, y)));
      }
    }
  }
  std::sort(diffs.begin(), diffs.end());
  state.counters["compared"] = static_cast<double>(diffs.size());
  state.counters["max_rel_diff"] = diffs.empty() ? 0.0 : diffs.back();
  state.counters["median_rel_diff"] = diffs.empty() ? 0.0 : diffs[diffs.size() / 2];
}
BENCHMARK(BM_ProfilerStability)->Iterations(3)->UseRealTime()->Unit(benchmark::kMillisecond);

// The per-step numerical-fault check (exec/numerics.h): all_finite over arg floats, e.g. every
// weight gradient of the default GPT (867,072 parameters). Counter: bytes checked per second.
void BM_FiniteCheck(benchmark::State& state) {
  Tensor g = random({state.range(0)}, 3);
  for (auto _ : state) benchmark::DoNotOptimize(all_finite(g.data(), g.numel()));
  state.SetBytesProcessed(state.iterations() * g.bytes());
}
BENCHMARK(BM_FiniteCheck)->Arg(867072)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMicrosecond);

// One checkpoint of the default GPT trained with Adam (weights + m + v: 3 x 867,072 floats)
// written with exec/checkpoint.h (temporaries, fsync, rename, manifest, directory fsync) into a
// directory under the system temp dir. Counter: bytes written per second.
void BM_CheckpointSave(benchmark::State& state) {
  const pw::models::Model model = pw::models::default_model();
  Network net(model, 1);
  Optimizer opt(net.parameters(), net.gradients(), OptimizerOptions{OptimizerKind::adam, 1e-3});
  StageState st;
  add_layer_parameters(net, 0, net.size(), st);
  add_optimizer_state(opt.state_tensors(), st);
  const std::string dir = (std::filesystem::temp_directory_path() / "pw_bench_checkpoint").string();
  const pw::Json id = checkpoint_identity(model, pw::Json::object(), pw::Json::object());
  int64_t step = 0, bytes = 0;
  for (auto _ : state) {
    save_checkpoint(dir, id, ++step, DataState{}, {st});
    bytes += std::filesystem::file_size(dir + "/stage-0.step-" + std::to_string(step) + ".bin");
  }
  state.SetBytesProcessed(bytes);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_CheckpointSave)->UseRealTime()->Unit(benchmark::kMillisecond);

// Drawing one mini-batch of synthetic data (exec/data/data.h) on the calling thread: arg 0 the
// mlp 8x1024 at batch 256 (regression, rank-32 teacher), arg 1 small vgg16 images
// (32 px, batch 32). Was ~200 ms for the mlp with Box-Muller noise and a dense teacher.
// Counter: samples per second.
void BM_SyntheticBatch(benchmark::State& state) {
  pw::models::ZooOptions z;
  z.depth = 8;
  z.width = 1024;
  z.image = 32;
  z.width_divisor = 8;
  z.classes = 10;
  const bool images = state.range(0) == 1;
  const int64_t batch = images ? 32 : 256;
  auto src = make_data_source(pw::models::build_zoo_model(images ? "vgg16" : "mlp", z), "", 1);
  for (auto _ : state) benchmark::DoNotOptimize(src->next(batch));
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_SyntheticBatch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
// A 3x3 conv (stride 1, pad 1) 64 -> 64 channels on 32x32 maps at batch 32: the conv2d layer's
// F + B + W against the same oneDNN convolution primitives run bare on preallocated buffers.
// Compare the two "flops" rates (the layer should reach >= 70% of bare).
constexpr int64_t kConvBatch = 32, kConvC = 64, kConvHW = 32;
double conv_flops() { return 3 * 2.0 * kConvBatch * kConvC * kConvHW * kConvHW * kConvC * 9; }

void BM_BareConv3x3FwdBwd(benchmark::State& state) {
  BareConv conv(kConvBatch, kConvC, kConvC, 3, 1, 1, kConvHW, kConvHW);
  Tensor x = random({kConvBatch, kConvC, kConvHW, kConvHW}, 5), dy = random({kConvBatch, kConvC, kConvHW, kConvHW}, 6);
  Tensor w = random({kConvC, kConvC, 3, 3}, 7), b = random({kConvC}, 8);
  Tensor y(dy.shape()), dx(x.shape()), dw(w.shape()), db(b.shape());
  for (auto _ : state) {
    conv.forward(x.data(), w.data(), b.data(), y.data());
    conv.backward_data(dy.data(), w.data(), dx.data());
    conv.backward_weights(x.data(), dy.data(), dw.data(), db.data());
    benchmark::DoNotOptimize(dw.data());
  }
  state.counters["flops"] = benchmark::Counter(conv_flops(), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_BareConv3x3FwdBwd)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Conv3x3LayerFwdBwd(benchmark::State& state) {
  auto l = make_layer(spec(pw::models::LayerKind::conv2d, {kConvC, kConvHW, kConvHW},
                           {{"in_c", kConvC},
                            {"out_c", kConvC},
                            {"kernel", 3},
                            {"stride", 1},
                            {"pad", 1},
                            {"in_h", kConvHW},
                            {"in_w", kConvHW}}),
                      {{kConvC, kConvHW, kConvHW}});
  l->init_parameters(1);
  Tensor x = random({kConvBatch, kConvC, kConvHW, kConvHW}, 5), dy = random({kConvBatch, kConvC, kConvHW, kConvHW}, 6);
  time_fwd_bwd(state, *l, x, dy);
  state.counters["flops"] = benchmark::Counter(conv_flops(), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Conv3x3LayerFwdBwd)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
