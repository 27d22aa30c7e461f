// The layers' seeded initialization (exec/layers/common.h): fill_normal in parallel gives the
// sequential draws' bits and leaves the generator where they would.
#include <doctest/doctest.h>

#include <cstring>

#include "exec/layers/common.h"
#include "exec/parallel.h"

namespace pw::exec {
namespace {

TEST_CASE("fill_normal: the sequential draws' bits on any thread count, and the generator after them") {
  const int threads = max_threads();
  for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{(1 << 14) * 2 + 3}, int64_t{100'001}}) {
    for (int t : {1, 2, 3}) {
      CAPTURE(n);
      CAPTURE(t);
      set_num_threads(t);
      Rng want(42), got(42);
      want.next();  // a generator part-way through its sequence
      got.next();
      std::vector<float> ref(static_cast<size_t>(n));
      for (float& v : ref) v = static_cast<float>(want.normal() * 0.02);
      Tensor x({n});
      fill_normal(x, got, 0.02);
      CHECK(std::memcmp(x.data(), ref.data(), ref.size() * sizeof(float)) == 0);
      CHECK(got.state() == want.state());
      CHECK(got.next() == want.next());
    }
  }
  set_num_threads(threads);
}

}  // namespace
}  // namespace pw::exec
