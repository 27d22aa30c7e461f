// grad_buckets: how a replicated stage's weight gradients are cut into all-reduce buckets,
// in the manner of PyTorch DDP: the gradient tensors (weight_gradients order, i.e. layer order)
// are grouped from the LAST tensor backwards, because the backward makes the last layers'
// gradients final first; a bucket is closed once it holds at least `bucket_bytes`. Bucket 0
// therefore ends at the last tensor and the buckets' union is the whole flat vector.
//
// The cut depends only on the tensor sizes, bucket_bytes and max_buckets, so every replica of
// a stage computes the same buckets. bucket_bytes <= 0 gives one bucket. At most max_buckets
// (>= 1) buckets: the threshold is raised to ceil(total / max_buckets) when needed.
// A stage without gradients (or all of size 0) has one empty bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/tensor.h"

namespace pw::exec {

struct GradBucket {
  size_t first_tensor = 0, end_tensor = 0;  // tensors [first_tensor, end_tensor) of the list
  int64_t flat_begin = 0, flat_end = 0;     // their elements in the flat vector (float index)
};

std::vector<GradBucket> grad_buckets(const std::vector<Tensor*>& grads, int64_t bucket_bytes, int max_buckets);

}  // namespace pw::exec
