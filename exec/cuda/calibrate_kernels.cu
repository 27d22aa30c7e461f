// Kernels of the CUDA calibration timer (exec/cuda/calibrate_timer.h).
#include "exec/cuda/calibrate_kernels.h"
#include "exec/cuda/kernel_util.cuh"
#include "exec/cuda/random_words.h"

namespace pw::exec::cuda::kernels {

namespace {

__global__ void empty_kernel() {}

__global__ void fill_bytes_kernel(uint16_t* p, int64_t n, uint16_t value) {
  for (int64_t i = global_index(); i < n; i += global_stride()) p[i] = value;
}

__global__ void fill_random_kernel(uint16_t* p, int64_t n, uint32_t seed) {
  for (int64_t i = global_index(); i < n; i += global_stride()) p[i] = random_operand_word(uint64_t(i), seed);
}

}  // namespace

void launch_empty(void* stream) {
  empty_kernel<<<1, 1, 0, as_stream(stream)>>>();
  check_launch("empty_kernel");
}

void fill_u16(void* p, int64_t n, uint16_t value, void* stream) {
  fill_bytes_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(static_cast<uint16_t*>(p), n, value);
  check_launch("fill_bytes_kernel");
}

void fill_random_u16(void* p, int64_t n, uint32_t seed, void* stream) {
  fill_random_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(static_cast<uint16_t*>(p), n, seed);
  check_launch("fill_random_kernel");
}

}  // namespace pw::exec::cuda::kernels
