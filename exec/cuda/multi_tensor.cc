#include "exec/cuda/multi_tensor.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pw::exec::cuda {

MultiTensorPlan plan_multi_tensor(const std::vector<int64_t>& sizes, int64_t chunk, int64_t max_blocks) {
  if (chunk < 1 || max_blocks < 1) throw std::invalid_argument("plan_multi_tensor: chunk and max_blocks must be >= 1");
  MultiTensorPlan plan;
  for (size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] < 0) throw std::invalid_argument("plan_multi_tensor: tensor " + std::to_string(t) + " has size < 0");
    for (int64_t b = 0; b < sizes[t]; b += chunk)
      plan.blocks.push_back({static_cast<int64_t>(t), b, std::min(b + chunk, sizes[t])});
  }
  const auto total = static_cast<int64_t>(plan.blocks.size());
  for (int64_t first = 0; first < total; first += max_blocks)
    plan.launches.push_back({first, std::min(max_blocks, total - first)});
  return plan;
}

std::vector<int64_t> multi_tensor_table(const std::vector<std::array<const void*, kAddresses>>& addresses,
                                        const MultiTensorPlan& plan) {
  std::vector<int64_t> words;
  words.reserve(addresses.size() * kAddresses + plan.blocks.size() * 3);
  for (const auto& a : addresses)
    for (const void* p : a) words.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)));
  for (const MultiTensorBlock& b : plan.blocks) {
    if (b.tensor < 0 || b.tensor >= static_cast<int64_t>(addresses.size()))
      throw std::invalid_argument("multi_tensor_table: a block names tensor " + std::to_string(b.tensor) + " of " +
                                  std::to_string(addresses.size()));
    words.insert(words.end(), {b.tensor, b.begin, b.end});
  }
  return words;
}

}  // namespace pw::exec::cuda
