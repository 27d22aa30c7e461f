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

// Adam over many tensors in one launch (multi_tensor.h): blocks [first_block, first_block +
// blocks) of the device table `table` (multi_tensor_table, addresses {p, g, m, v} per tensor,
// `tensors` of them), each element updated by exec/optimizer_update.h's adam_update, as
// kernels.h's adam_step does, so the results equal one adam_step per tensor bit for bit.
void adam_step_multi(const int64_t* table, int64_t tensors, int64_t first_block, int64_t blocks, float lr, float b1,
                     float b2, float c1, float c2, float eps, float wd, void* stream);

}  // namespace pw::exec::cuda::kernels
