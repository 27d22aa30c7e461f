// Kernels of single-device training that the layers do not need (train_kernels.cu), as plain
// functions over device pointers: queued on `stream` (a cudaStream_t passed as void*), never
// waiting; a launch error throws std::runtime_error naming the kernel.
#pragma once

#include <cstdint>

namespace pw::exec::cuda::kernels {

// flag[0] = 1 when any of x[0, n) is NaN or +-inf (the exponent-bits test of exec/numerics.h's
// all_finite); flag[0] is left as it is otherwise, so the caller zeroes it first. Threads that
// find a non-finite value all store the same 1, so the result does not depend on their order.
void mark_nonfinite(const float* x, int64_t n, float* flag, void* stream);

}  // namespace pw::exec::cuda::kernels
