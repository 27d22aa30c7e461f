// grad_buckets: DDP-style buckets from the last gradient tensor backwards (hand-checked cuts),
// one bucket when asked for none, and the cap on the bucket count.
#include <doctest/doctest.h>

#include "exec/runtime/grad_buckets.h"

using namespace pw::exec;

namespace {

struct Grads {
  std::vector<Tensor> t;
  std::vector<Tensor*> ptrs;
  explicit Grads(const std::vector<int64_t>& sizes) {
    for (int64_t n : sizes) t.emplace_back(std::vector<int64_t>{n});
    for (Tensor& x : t) ptrs.push_back(&x);
  }
};

bool same(const GradBucket& b, size_t first, size_t end, int64_t lo, int64_t hi) {
  return b.first_tensor == first && b.end_tensor == end && b.flat_begin == lo && b.flat_end == hi;
}

}  // namespace

TEST_CASE("grad buckets: cut from the last tensor backwards once a bucket holds bucket_bytes") {
  const Grads g({4, 2, 8, 1});  // 16, 8, 32, 4 bytes; flat [0,4) [4,6) [6,14) [14,15)
  auto b = grad_buckets(g.ptrs, 12, 100);
  REQUIRE(b.size() == 2);
  CHECK(same(b[0], 2, 4, 6, 15));    // 4 + 32 bytes >= 12
  CHECK(same(b[1], 0, 2, 0, 6));     // 8 + 16
  b = grad_buckets(g.ptrs, 1, 100);  // one tensor per bucket, last first
  REQUIRE(b.size() == 4);
  CHECK(same(b[0], 3, 4, 14, 15));
  CHECK(same(b[1], 2, 3, 6, 14));
  CHECK(same(b[2], 1, 2, 4, 6));
  CHECK(same(b[3], 0, 1, 0, 4));
  for (int64_t none : {int64_t{0}, int64_t{-1}}) {
    b = grad_buckets(g.ptrs, none, 100);
    REQUIRE(b.size() == 1);
    CHECK(same(b[0], 0, 4, 0, 15));
  }
  b = grad_buckets(g.ptrs, 1, 1);
  REQUIRE(b.size() == 1);
  CHECK(same(b[0], 0, 4, 0, 15));
}

TEST_CASE("grad buckets: at most max_buckets (the threshold raised)") {
  const Grads g({4, 2, 8, 1});  // 60 bytes; max 2: threshold 30
  auto b = grad_buckets(g.ptrs, 1, 2);
  REQUIRE(b.size() == 2);
  CHECK(same(b[0], 2, 4, 6, 15));
  CHECK(same(b[1], 0, 2, 0, 6));
  b = grad_buckets(g.ptrs, 1, 3);  // threshold 20: the same two
  REQUIRE(b.size() == 2);
  const Grads e({1, 1, 1, 1});  // 16 bytes, max 3: threshold 6 closes two pairs
  b = grad_buckets(e.ptrs, 1, 3);
  REQUIRE(b.size() == 2);
  CHECK(same(b[0], 2, 4, 2, 4));
  CHECK(same(b[1], 0, 2, 0, 2));
  const Grads none({});
  b = grad_buckets(none.ptrs, 1, 4);
  REQUIRE(b.size() == 1);
  CHECK(same(b[0], 0, 0, 0, 0));
}
