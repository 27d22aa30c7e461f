// The allocator's per-thread reuse (exec/tensor.h): a buffer a thread frees comes back to that
// thread's next allocation of its size class, another thread does not get it while the owner's
// list has room, a thread's list returns to the shared one when the thread ends, and the
// live/peak accounting is the same whichever list a buffer sits on; under a memory limit the
// cache is returned before an allocation gives up (every thread's list, while those threads
// still run), and a huge-page buffer counts once against the data segment.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/huge_pages.h"
#include "exec/machine/memory.h"
#include "exec/tensor.h"
#include "models/error.h"

using pw::exec::Allocator;

namespace {
// A size no other code in this test binary is likely to use at the same time (odd class).
constexpr size_t kBytes = 3 * 4096 + 8;

// VmData (what ulimit -d bounds) in bytes, -1 where unread.
int64_t vm_data_bytes() { return pw::exec::self_status_bytes("VmData:"); }
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

TEST_CASE("allocator: under a memory limit, cached buffers of other sizes are returned before it gives up") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  MESSAGE("SKIPPED: a sanitizer build cannot run under a data limit");
#else
  // In a child process, under ulimit -d of what it maps plus 96 MiB: a 64 MiB buffer freed into
  // the cache, then a 48 MiB one (another size class). Both at once would pass the limit.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    Allocator a;
    const int64_t data = vm_data_bytes();
    const rlim_t limit = static_cast<rlim_t>(data) + (rlim_t{96} << 20);
    const struct rlimit rl { limit, limit };
    if (data < 0 || ::setrlimit(RLIMIT_DATA, &rl) != 0) ::_exit(2);
    void* big = a.allocate(size_t{64} << 20);
    a.deallocate(big, size_t{64} << 20);
    try {
      void* other = a.allocate(size_t{48} << 20);
      a.deallocate(other, size_t{48} << 20);
    } catch (const pw::OutOfMemory&) { ::_exit(1); }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
#endif
}

TEST_CASE("allocator: release_cache returns the lists of threads that are still running") {
  // A pipeline's workers keep their lists while they run; an allocation that fails under a
  // memory limit calls release_cache() on its own thread and must get those buffers back too.
  Allocator& g = Allocator::global();
  g.release_cache();
  std::mutex mu;
  std::condition_variable cv;
  bool freed = false, done = false;
  std::thread worker([&] {
    void* p = g.allocate(kBytes);
    g.deallocate(p, kBytes);  // onto the worker's own list
    std::unique_lock<std::mutex> lock(mu);
    freed = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done; });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return freed; });
  }
  CHECK(g.cached_bytes() >= static_cast<int64_t>(kBytes));
  g.release_cache();
  CHECK(g.cached_bytes() == 0);  // the worker still runs, its list is empty
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  worker.join();
  CHECK(g.cached_bytes() == 0);
}

TEST_CASE("allocator: a huge-page buffer holds its own size of the data segment, and gives it back") {
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("SKIPPED: under AddressSanitizer large buffers stay on its heap (overflow reports)");
#else
  // aligned_alloc(2 MiB, n) kept a span of n + 2 MiB: a 2 MiB tensor took 4 MiB of ulimit -d.
  Allocator a;
  constexpr int kBuffers = 8;
  constexpr size_t kSize = pw::exec::kHugePage;
  const int64_t before = vm_data_bytes();
  REQUIRE(before > 0);
  std::vector<void*> held;
  for (int i = 0; i < kBuffers; ++i) held.push_back(a.allocate(kSize));
  const int64_t grown = vm_data_bytes() - before;
  CAPTURE(grown);
  CHECK(grown >= kBuffers * static_cast<int64_t>(kSize));
  CHECK(grown < kBuffers * static_cast<int64_t>(kSize) * 3 / 2);
  for (void* p : held) {
    CHECK(reinterpret_cast<uintptr_t>(p) % kSize == 0);  // huge-page aligned
    static_cast<char*>(p)[kSize - 1] = 1;                // and writable to its last byte
    a.deallocate(p, kSize);
  }
  a.release_cache();
  CHECK(vm_data_bytes() - before < static_cast<int64_t>(kSize));
#endif
}

TEST_CASE("map_huge_aligned: aligned and exactly its size, also where the kernel first offers an unaligned place") {
  constexpr size_t kSize = 3 * pw::exec::kHugePage;
  // A free, unaligned address to offer: inside a region just mapped and returned.
  void* probe = ::mmap(nullptr, 4 * pw::exec::kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(probe != MAP_FAILED);
  ::munmap(probe, 4 * pw::exec::kHugePage);
  const uintptr_t region = reinterpret_cast<uintptr_t>(probe);
  void* unaligned =
      reinterpret_cast<void*>((region + pw::exec::kHugePage - 1) / pw::exec::kHugePage * pw::exec::kHugePage + 4096);
  for (void* hint : {static_cast<void*>(nullptr), unaligned}) {
    const int64_t before = vm_data_bytes();
    void* p = pw::exec::map_huge_aligned(kSize, hint);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % pw::exec::kHugePage == 0);
    CHECK(vm_data_bytes() - before == static_cast<int64_t>(kSize));  // no head or tail left mapped
    static_cast<char*>(p)[kSize - 1] = 1;
    CHECK(::munmap(p, kSize) == 0);
    CHECK(vm_data_bytes() == before);
  }
}
