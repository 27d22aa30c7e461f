// Host entry points of the calibration kernels (exec/cuda/calibrate_kernels.cu), queued on
// `stream`.
#pragma once

#include <cstdint>

namespace pw::exec::cuda::kernels {

// One empty kernel of one thread.
void launch_empty(void* stream);
// p[0, n) = value, as 16-bit words (a pattern that is a small non-zero number in bf16 and,
// as pairs, in fp32).
void fill_u16(void* p, int64_t n, uint16_t value, void* stream);
// p[i] = random_operand_word(i, seed) for i in [0, n) (exec/cuda/random_words.h).
void fill_random_u16(void* p, int64_t n, uint32_t seed, void* stream);

}  // namespace pw::exec::cuda::kernels
