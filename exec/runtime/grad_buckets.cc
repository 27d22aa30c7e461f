#include "exec/runtime/grad_buckets.h"

#include <algorithm>

#include "models/error.h"

namespace pw::exec {

std::vector<GradBucket> grad_buckets(const std::vector<Tensor*>& grads, int64_t bucket_bytes, int max_buckets) {
  PW_CHECK(max_buckets >= 1, "grad_buckets: max_buckets must be >= 1");
  std::vector<int64_t> begin(grads.size() + 1, 0);  // flat index of each tensor's first element
  for (size_t i = 0; i < grads.size(); ++i) begin[i + 1] = begin[i] + grads[i]->numel();
  const int64_t total_bytes = begin.back() * static_cast<int64_t>(sizeof(float));
  if (bucket_bytes <= 0 || max_buckets == 1 || total_bytes == 0) {
    return {GradBucket{0, grads.size(), 0, begin.back()}};
  }
  const int64_t threshold = std::max(bucket_bytes, (total_bytes + max_buckets - 1) / max_buckets);
  std::vector<GradBucket> out;
  size_t end = grads.size();
  int64_t held = 0;
  for (size_t i = grads.size(); i-- > 0;) {
    held += grads[i]->bytes();
    if (held >= threshold || i == 0) {
      out.push_back(GradBucket{i, end, begin[i], begin[end]});
      end = i;
      held = 0;
    }
  }
  // Every bucket but the last-closed holds >= threshold >= total / max_buckets bytes, and tensors
  // are not empty, so there are at most max_buckets.
  PW_CHECK(static_cast<int>(out.size()) <= max_buckets, "grad_buckets: more buckets than allowed");
  return out;
}

}  // namespace pw::exec
