// The per-element optimizer steps, defined once for the CPU optimizer (exec/optimizer.cc) and
// the CUDA kernels (exec/cuda/kernels.cu), so both backends take the same step in the same
// arithmetic order (sqrtf is correctly rounded on both).
//   SGD:  d = g + wd p; with momentum (v given): v = mu v + d, p -= lr v; without: p -= lr d.
//   Adam: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//         p -= lr ((m c1) / (sqrt(v c2) + eps) + wd p)   (c1, c2: the bias corrections
//         1 / (1 - beta^t); decoupled weight decay, AdamW).
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define PW_HOST_DEVICE __host__ __device__
#else
#define PW_HOST_DEVICE
#endif

namespace pw::exec {

PW_HOST_DEVICE inline void sgd_update(float& p, float g, float* v, float lr, float mu, float wd) {
  const float d = g + wd * p;
  if (v) {
    *v = mu * *v + d;
    p -= lr * *v;
  } else {
    p -= lr * d;
  }
}

PW_HOST_DEVICE inline void adam_update(float& p, float g, float& m, float& v, float lr, float b1, float b2, float c1,
                                       float c2, float eps, float wd) {
  m = b1 * m + (1 - b1) * g;
  v = b2 * v + (1 - b2) * g * g;
  p -= lr * ((m * c1) / (sqrtf(v * c2) + eps) + wd * p);
}

}  // namespace pw::exec
