// The calibration's random operands (exec/cuda/random_words.h), without a GPU: every word is a
// finite bf16 in +-[2^-7, 1), every pair of words a finite fp32 in the same range, signs and
// values vary (not a constant in disguise), and the words depend on the seed.
#include "exec/cuda/random_words.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <set>

namespace pw::exec::cuda {
namespace {

float bf16_value(uint16_t w) {
  const uint32_t bits = uint32_t{w} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float fp32_value(uint16_t low, uint16_t high) {
  const uint32_t bits = (uint32_t{high} << 16) | low;  // little-endian: the low word first in memory
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

bool in_range(float v) { return std::isfinite(v) && std::fabs(v) >= 0x1p-7f && std::fabs(v) < 1.0f; }

TEST_CASE("random operand words: finite bf16 and fp32 of magnitude 2^-7 up to 1, varied, seeded") {
  constexpr int n = 200000;
  int negative = 0, bad_bf16 = 0, bad_fp32 = 0, same_as_other_seed = 0;
  std::set<uint16_t> distinct;
  for (int i = 0; i < n; ++i) {
    const uint16_t w = random_operand_word(uint64_t(i), 1);
    bad_bf16 += in_range(bf16_value(w)) ? 0 : 1;
    negative += bf16_value(w) < 0 ? 1 : 0;
    distinct.insert(w);
    same_as_other_seed += w == random_operand_word(uint64_t(i), 2) ? 1 : 0;
    if (i % 2 == 1) bad_fp32 += in_range(fp32_value(random_operand_word(uint64_t(i - 1), 1), w)) ? 0 : 1;
  }
  CHECK(bad_bf16 == 0);
  CHECK(bad_fp32 == 0);
  CHECK(negative > n * 45 / 100);
  CHECK(negative < n * 55 / 100);
  CHECK(distinct.size() == 2 * 7 * 128);  // every sign, exponent and mantissa comes up
  CHECK(same_as_other_seed < n / 100);
}

}  // namespace
}  // namespace pw::exec::cuda
