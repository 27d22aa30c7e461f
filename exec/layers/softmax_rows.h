// Row kernels of the causal softmax in attention (private to exec/layers). Written so the
// compiler vectorizes them (fixed-width partial sums, a branch-free polynomial exp) and built
// for AVX-512, AVX2 and baseline x86-64 with runtime dispatch (GCC target_clones), since the
// default flags do not enable AVX.
#pragma once

#include <cstdint>

namespace pw::exec {

// In place on row[0, n): row = softmax(row * scale); the caller zeroes the masked tail.
void softmax_row(float* row, int64_t n, float scale);
// In place on d[0, n): d = p * (d - dot(p, d)) * scale (softmax backward of row p, times scale).
void softmax_backward_row(const float* p, float* d, int64_t n, float scale);
// exp(x) of the kernels above (relative error < 2e-7 for x in [-87, 88]; clamped outside).
float fast_exp(float x);

}  // namespace pw::exec
