// The multi-tensor apply's plan and table (exec/cuda/multi_tensor.h), on the host: every
// element of every tensor in exactly one block, chunks in order, launches split at the block
// limit, the table's words where the kernel reads them.
#include "exec/cuda/multi_tensor.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

namespace pw::exec::cuda {
namespace {

// How often each element of each tensor is covered by the plan's blocks.
std::vector<std::vector<int>> coverage(const MultiTensorPlan& plan, const std::vector<int64_t>& sizes) {
  std::vector<std::vector<int>> seen;
  for (int64_t n : sizes) seen.emplace_back(static_cast<size_t>(n), 0);
  for (const MultiTensorBlock& b : plan.blocks)
    for (int64_t k = b.begin; k < b.end; ++k) ++seen.at(b.tensor).at(k);
  return seen;
}

TEST_CASE("multi-tensor plan: chunks of each tensor in order and empty tensors skipped") {
  const std::vector<int64_t> sizes{10, 0, 3, 8};
  const MultiTensorPlan plan = plan_multi_tensor(sizes, 4);
  // 10 -> [0,4) [4,8) [8,10); 0 -> none; 3 -> [0,3); 8 -> [0,4) [4,8)
  REQUIRE(plan.blocks.size() == 6);
  CHECK((plan.blocks[0].tensor == 0 && plan.blocks[0].begin == 0 && plan.blocks[0].end == 4));
  CHECK((plan.blocks[2].tensor == 0 && plan.blocks[2].begin == 8 && plan.blocks[2].end == 10));
  CHECK((plan.blocks[3].tensor == 2 && plan.blocks[3].begin == 0 && plan.blocks[3].end == 3));
  CHECK((plan.blocks[5].tensor == 3 && plan.blocks[5].begin == 4 && plan.blocks[5].end == 8));
  REQUIRE(plan.launches.size() == 1);  // one launch for the whole list
  CHECK((plan.launches[0].first_block == 0 && plan.launches[0].blocks == 6));
  for (const auto& t : coverage(plan, sizes))
    for (int c : t) CHECK(c == 1);
}

TEST_CASE("multi-tensor plan: launches split at the block limit and none without elements") {
  const std::vector<int64_t> sizes{100000, 1, 65536, 7};
  const MultiTensorPlan plan = plan_multi_tensor(sizes, 8192, 5);
  // 13 + 1 + 8 + 1 = 23 blocks -> launches of 5, 5, 5, 5, 3
  REQUIRE(plan.blocks.size() == 23);
  REQUIRE(plan.launches.size() == 5);
  CHECK((plan.launches[4].first_block == 20 && plan.launches[4].blocks == 3));
  int64_t next = 0;
  for (const MultiTensorLaunch& l : plan.launches) {
    CHECK(l.first_block == next);
    CHECK((l.blocks >= 1 && l.blocks <= 5));
    next += l.blocks;
  }
  CHECK(next == 23);
  for (const auto& t : coverage(plan, sizes))
    for (int c : t) CHECK(c == 1);
  CHECK(plan_multi_tensor({0, 0}).launches.empty());
  CHECK(plan_multi_tensor({}).blocks.empty());
  CHECK_THROWS_AS(plan_multi_tensor({4}, 0), std::invalid_argument);
  CHECK_THROWS_AS(plan_multi_tensor({-1}), std::invalid_argument);
}

TEST_CASE("multi-tensor table: addresses per tensor then tensor and range per block") {
  float a[4], b[4], c[4], d[4], e[2], f[2], g[2], h[2];
  const MultiTensorPlan plan = plan_multi_tensor({4, 2}, 3);
  const std::vector<int64_t> words = multi_tensor_table({{a, b, c, d}, {e, f, g, h}}, plan);
  REQUIRE(words.size() == 2 * 4 + 3 * 3);
  CHECK(words[0] == static_cast<int64_t>(reinterpret_cast<uintptr_t>(a)));
  CHECK(words[3] == static_cast<int64_t>(reinterpret_cast<uintptr_t>(d)));
  CHECK(words[4] == static_cast<int64_t>(reinterpret_cast<uintptr_t>(e)));
  const std::vector<int64_t> blocks(words.begin() + 8, words.end());
  CHECK(blocks == std::vector<int64_t>{0, 0, 3, 0, 3, 4, 1, 0, 2});
  CHECK_THROWS_AS(multi_tensor_table({{a, b, c, d}}, plan), std::invalid_argument);
}

}  // namespace
}  // namespace pw::exec::cuda
