// The per-element optimizer steps, defined once for the CPU optimizer (exec/optimizer.cc) and
// the CUDA kernels (exec/cuda/kernels.cu, train_kernels.cu), so both backends take the same step
// in the same arithmetic order, each operation rounded on its own: nvcc fuses a * b + c into one
// FMA (one rounding) unless told otherwise, so on the device every product and sum goes through
// the round-to-nearest intrinsics (mul, add, sub below); the host build targets baseline x86-64,
// which has no FMA to contract into. Division and sqrtf are correctly rounded on both (no
// --use_fast_math). So a step on the GPU is the CPU's step bit for bit, and the per-tensor and
// fused Adam kernels agree by construction, not by how nvcc happened to fuse each file.
//   SGD:  d = g + wd p; with momentum (v given): v = mu v + d, p -= lr v; without: p -= lr d.
//   Adam: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//         p -= lr ((m c1) / (sqrt(v c2) + eps) + wd p)   (c1, c2: the bias corrections
//         1 / (1 - beta^t); decoupled weight decay, AdamW).
#pragma once

#include <math.h>

#include "exec/host_device.h"

namespace pw::exec {

namespace rounded {  // a op b, rounded once to the nearest float, never fused with a neighbour
#if defined(__CUDA_ARCH__)
__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float sub(float a, float b) { return __fsub_rn(a, b); }
#else
inline float mul(float a, float b) { return a * b; }
inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
#endif
}  // namespace rounded

PW_HOST_DEVICE inline void sgd_update(float& p, float g, float* v, float lr, float mu, float wd) {
  using namespace rounded;
  const float d = add(g, mul(wd, p));
  if (v) {
    *v = add(mul(mu, *v), d);
    p = sub(p, mul(lr, *v));
  } else {
    p = sub(p, mul(lr, d));
  }
}

PW_HOST_DEVICE inline void adam_update(float& p, float g, float& m, float& v, float lr, float b1, float b2, float c1,
                                       float c2, float eps, float wd) {
  using namespace rounded;
  m = add(mul(b1, m), mul(sub(1.0f, b1), g));
  v = add(mul(b2, v), mul(mul(sub(1.0f, b2), g), g));
  p = sub(p, mul(lr, add(mul(m, c1) / add(sqrtf(mul(v, c2)), eps), mul(wd, p))));
}

}  // namespace pw::exec
