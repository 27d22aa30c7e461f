// The operands the calibration times its products on (calibrate_timer.cc): 16-bit words from a
// counter-based hash (splitmix64 of index and seed), each a bf16 of random sign and mantissa with
// magnitude in [2^-7, 1). Read as fp32 (pairs of words, little-endian), the high word sets sign,
// exponent and top mantissa bits, so every float lies in +-[2^-7, 1) too: finite, no denormals,
// sums of 16k products far from overflow. Random rather than constant operands: a product of
// constants runs measurably faster on the same card (fewer toggling bits, less power, higher
// clocks), which would flatter the device file. Shared by the kernel and the host tests.
#pragma once

#include <cstdint>

#include "exec/host_device.h"

namespace pw::exec::cuda {

PW_HOST_DEVICE inline uint16_t random_operand_word(uint64_t index, uint32_t seed) {
  uint64_t z = index + 0x9E3779B97F4A7C15ull * (uint64_t{seed} + 1u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const uint32_t sign = static_cast<uint32_t>((z >> 16) & 1u) << 15;
  const uint32_t exponent = (120u + static_cast<uint32_t>((z >> 17) % 7u)) << 7;  // 2^-7 .. 2^-1
  const uint32_t mantissa = static_cast<uint32_t>(z & 0x7Fu);
  return static_cast<uint16_t>(sign | exponent | mantissa);
}

}  // namespace pw::exec::cuda
