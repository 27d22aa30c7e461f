// The allocator's per-thread reuse (exec/tensor.h): a buffer a thread frees comes back to that
// thread's next allocation of its size class, another thread does not get it while the owner's
// list has room, a thread's list returns to the shared one when the thread ends, and the
// live/peak accounting is the same whichever list a buffer sits on.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "exec/tensor.h"

using pw::exec::Allocator;

namespace {
// A size no other code in this test binary is likely to use at the same time (odd class).
constexpr size_t kBytes = 3 * 4096 + 8;
}  // namespace

TEST_CASE("allocator: a thread gets back the buffer it freed, another thread does not") {
  Allocator& g = Allocator::global();
  g.release_cache();
  void* mine = g.allocate(kBytes);
  g.deallocate(mine, kBytes);
  void* other = nullptr;
  std::thread t([&] {
    other = g.allocate(kBytes);  // this thread's list is empty and the buffer is on main's
    g.deallocate(other, kBytes);
  });
  t.join();  // t's list goes to the shared one
  CHECK(other != mine);
  void* again = g.allocate(kBytes);
  CHECK(again == mine);  // main's own list first
  void* shared = g.allocate(kBytes);
  CHECK(shared == other);  // then the shared list, where t's buffer went when t ended
  g.deallocate(again, kBytes);
  g.deallocate(shared, kBytes);
  g.release_cache();
}

TEST_CASE("allocator: past kThreadCacheDepth a thread's frees go to the shared list") {
  Allocator& g = Allocator::global();
  g.release_cache();
  const size_t n = Allocator::kThreadCacheDepth + 3;
  std::vector<void*> held;
  for (size_t i = 0; i < n; ++i) held.push_back(g.allocate(kBytes));
  for (void* p : held) g.deallocate(p, kBytes);  // the first kThreadCacheDepth stay with main
  std::vector<void*> got;
  std::thread t([&] {
    for (size_t i = 0; i < 3; ++i) got.push_back(g.allocate(kBytes));
    for (void* p : got) g.deallocate(p, kBytes);
  });
  t.join();
  // The 3 overflowing buffers (the last ones main freed) went to the shared list, and t took them.
  std::vector<void*> overflow(held.end() - 3, held.end());
  std::sort(overflow.begin(), overflow.end());
  std::sort(got.begin(), got.end());
  CHECK(got == overflow);
  g.release_cache();
}

TEST_CASE("allocator: live and peak bytes count buffers whichever list they come from") {
  Allocator& g = Allocator::global();
  g.release_cache();
  const int64_t live0 = g.live_bytes();
  g.reset_peak();
  void* a = g.allocate(kBytes);
  void* b = g.allocate(kBytes);
  CHECK(g.live_bytes() == live0 + 2 * static_cast<int64_t>(kBytes));
  g.deallocate(a, kBytes);
  std::thread t([&] { g.deallocate(b, kBytes); });  // freed by another thread
  t.join();
  CHECK(g.live_bytes() == live0);
  void* c = g.allocate(kBytes);  // from main's own list
  CHECK(c == a);
  CHECK(g.live_bytes() == live0 + static_cast<int64_t>(kBytes));
  CHECK(g.peak_bytes() == live0 + 2 * static_cast<int64_t>(kBytes));
  g.deallocate(c, kBytes);
  g.release_cache();
}
