// Multi-tensor apply: one kernel launch for an elementwise update over many tensors (the fused
// Adam step of a stage's parameters). The tensors are cut into chunks of at most `chunk`
// elements, one thread block per chunk; the launches' blocks read their (tensor, range) from a
// table in device memory, which holds the tensors' addresses too. Host code: the plan and the
// table are built and checked without a GPU; the kernel is in train_kernels.cu.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace pw::exec::cuda {

inline constexpr int64_t kMultiTensorChunk = 8192;                  // elements per block
inline constexpr int64_t kMultiTensorMaxBlocks = int64_t{1} << 30;  // blocks per launch (grid.x < 2^31)

struct MultiTensorBlock {
  int64_t tensor = 0;          // index in the tensor list
  int64_t begin = 0, end = 0;  // element range [begin, end), end - begin <= chunk
};
struct MultiTensorLaunch {
  int64_t first_block = 0, blocks = 0;  // a run of plan.blocks
};
struct MultiTensorPlan {
  std::vector<MultiTensorBlock> blocks;  // tensors in order, each one's chunks in order
  std::vector<MultiTensorLaunch> launches;
};

// Blocks covering every element of every tensor exactly once (tensors of size 0 get none),
// grouped into launches of at most max_blocks blocks (none for no elements at all). Throws
// std::invalid_argument for chunk or max_blocks below 1 or a negative size.
MultiTensorPlan plan_multi_tensor(const std::vector<int64_t>& sizes, int64_t chunk = kMultiTensorChunk,
                                  int64_t max_blocks = kMultiTensorMaxBlocks);

// The device table of a plan, as 64-bit words: for each tensor its `kAddresses` addresses (in
// the kernel's order, e.g. p, g, m, v), then for each block {tensor, begin, end}.
inline constexpr int kAddresses = 4;
std::vector<int64_t> multi_tensor_table(const std::vector<std::array<const void*, kAddresses>>& addresses,
                                        const MultiTensorPlan& plan);

}  // namespace pw::exec::cuda
