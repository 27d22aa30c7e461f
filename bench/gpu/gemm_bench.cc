// The CUDA backend's GEMM (exec/cuda/gemm.h) at the forward shapes of GPT-2 small with
// batch 8 x seq 1024 rows, fp32 with TF32 off and on: the same products bench/gpu/torch_gpt.py
// times with torch.matmul (x @ W.T). Prints one JSON object. Where no CUDA device can be used,
// one line and exit 77 (as the GPU tests).
//   pw_bench_gpu_gemm [--rows R] [--reps N]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "exec/cuda/gemm.h"
#include "exec/device_ops.h"
#include "exec/layer.h"

namespace {

struct Shape {
  const char* name;
  int64_t n, k;
};

// Operands of uniform values in [-1, 1) from a fixed-seed generator, as torch_gpt.py's randn
// ones: a product of constants runs measurably faster on the same card (fewer bits toggle, less
// power, higher clocks), which would flatter the comparison with torch.matmul.
void upload_random(pw::exec::Tensor& t, uint32_t seed) {
  std::vector<float> host(static_cast<size_t>(t.numel()));
  uint32_t x = 0x9E3779B9u * (seed + 1);
  for (float& v : host) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<float>(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  pw::exec::copy_from_host(host.data(), t);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 8 * 1024, reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rows") == 0) rows = std::atoll(argv[i + 1]);
    else if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "pw_bench_gpu_gemm: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const std::string why = pw::exec::unusable_reason(pw::exec::Device::cuda(0));
  if (!why.empty()) {
    std::printf("SKIPPED: the GEMM benchmark needs a CUDA device: %s\n", why.c_str());
    return 77;
  }
  using namespace pw::exec;
  cuda::CudaDevice& dev = cuda::CudaDevice::get(0);
  const int64_t d = 768, vocab = 50257;
  const std::vector<Shape> shapes = {
      {"qkv", 3 * d, d}, {"proj", d, d}, {"fc1", 4 * d, d}, {"fc2", d, 4 * d}, {"lm_head", vocab, d}};
  std::printf("{\"format\": \"pipewright.gpu-gemm-bench/1\", \"rows\": %lld, \"gemm\": [",
              static_cast<long long>(rows));
  bool first = true;
  for (bool tf32 : {false, true}) {
    dev.set_tf32(tf32);
    for (const Shape& s : shapes) {
      Tensor x({rows, s.k}, dev.memory()), w({s.n, s.k}, dev.memory()), y({rows, s.n}, dev.memory());
      upload_random(x, 1);
      upload_random(w, 2);
      cuda::GemmShape g;
      g.m = rows;
      g.n = s.n;
      g.k = s.k;
      g.trans_b = true;
      for (int i = 0; i < 3; ++i) cuda::gemm(dev, g, x.data(), w.data(), y.data());
      dev.synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < reps; ++i) cuda::gemm(dev, g, x.data(), w.data(), y.data());
      dev.synchronize();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / double(reps);
      const double tflops = 2.0 * double(rows) * double(s.n) * double(s.k) / (ms * 1e-3) / 1e12;
      std::printf(
          "%s\n {\"name\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"tf32\": %s, \"ms\": %.4f, "
          "\"tflops\": %.3f}",
          first ? "" : ",", s.name, static_cast<long long>(rows), static_cast<long long>(s.n),
          static_cast<long long>(s.k), tf32 ? "true" : "false", ms, tflops);
      first = false;
    }
  }
  dev.set_tf32(false);
  std::printf("]}\n");
  return 0;
}
