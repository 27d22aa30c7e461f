// The device caching policy over a fake driver: host memory for the device, events that
// complete only when the test says so, and a memory budget for the out-of-memory path.
#include "exec/cuda/caching_allocator.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <stdexcept>
#include <vector>

#include "models/error.h"

namespace {

using pw::exec::cuda::CachingAllocator;
using pw::exec::cuda::EventHandle;
using pw::exec::cuda::StreamHandle;
using pw::exec::cuda::StreamMemory;

struct FakeEvent {
  StreamHandle stream = nullptr;
  int64_t position = -1;  // the stream's queued-work count at the recording
};

// A device whose streams are counters of queued work; complete(s) marks all of s's work done.
class FakeDriver : public pw::exec::cuda::DeviceDriver {
 public:
  explicit FakeDriver(size_t budget = size_t{1} << 30) : budget_(budget) {}
  ~FakeDriver() override {
    CHECK(live_events == 0);
    CHECK(blocks.empty());
  }
  pw::exec::Device device() const override { return pw::exec::Device::cuda(3); }
  void* raw_allocate(size_t bytes) override {
    if (used_ + bytes > budget_) return nullptr;
    void* p = std::aligned_alloc(512, bytes);
    used_ += bytes;
    blocks[p] = bytes;
    ++allocations;
    return p;
  }
  void raw_free(void* p) override {
    REQUIRE(blocks.count(p) == 1);
    used_ -= blocks[p];
    blocks.erase(p);
    std::free(p);
    ++frees;
  }
  EventHandle create_event() override {
    ++live_events;
    return new FakeEvent;
  }
  void destroy_event(EventHandle e) override {
    --live_events;
    delete static_cast<FakeEvent*>(e);
  }
  void record_event(EventHandle e, StreamHandle s) override {
    if (broken) throw std::runtime_error("CUDA: cudaEventRecord: an illegal memory access was encountered");
    auto* ev = static_cast<FakeEvent*>(e);
    ev->stream = s;
    ev->position = queued_[s];
  }
  bool event_done(EventHandle e) override {
    auto* ev = static_cast<FakeEvent*>(e);
    return done_[ev->stream] >= ev->position;
  }
  void wait_event(EventHandle e) override {
    auto* ev = static_cast<FakeEvent*>(e);
    ++waits;
    done_[ev->stream] = std::max(done_[ev->stream], ev->position);
  }
  void fill(float* p, int64_t n, float v, StreamHandle s) override {
    for (int64_t i = 0; i < n; ++i) p[i] = v;
    queue(s);
  }
  void copy(void* dst, const void* src, size_t bytes, StreamHandle s) override {
    std::memcpy(dst, src, bytes);
    queue(s);
  }

  // Test controls: queue a kernel on s (work not done until complete(s)).
  void queue(StreamHandle s) { ++queued_[s]; }
  void complete(StreamHandle s) { done_[s] = queued_[s]; }

  std::map<void*, size_t> blocks;
  int allocations = 0, frees = 0, waits = 0, live_events = 0;
  bool broken = false;  // a device in a sticky error state: event recording fails

 private:
  size_t budget_, used_ = 0;
  std::map<StreamHandle, int64_t> queued_, done_;
};

StreamHandle stream(int i) { return reinterpret_cast<StreamHandle>(static_cast<uintptr_t>(0x1000 + i)); }

}  // namespace

TEST_CASE("device size classes: powers of two from 512 B to 4 KiB, then eighths of the next power of two") {
  CHECK(CachingAllocator::size_class(1) == 512);
  CHECK(CachingAllocator::size_class(512) == 512);
  CHECK(CachingAllocator::size_class(513) == 1024);
  CHECK(CachingAllocator::size_class(4096) == 4096);
  CHECK(CachingAllocator::size_class(4097) == 8192);                 // step max(4096, 8192/8)
  CHECK(CachingAllocator::size_class(40000) == 40960);               // pow2 65536, step 8192
  CHECK(CachingAllocator::size_class(1000000) == 1048576);           // pow2 2^20, step 131072
  CHECK(CachingAllocator::size_class(1048577) == 1048576 + 262144);  // pow2 2^21, step 2^18
  for (size_t b : {size_t{1}, size_t{777}, size_t{5000}, size_t{123456}, size_t{9999999}}) {
    const size_t c = CachingAllocator::size_class(b);
    CHECK(c >= b);
    CHECK(c % 512 == 0);
    if (b > 32768) CHECK(double(c - b) <= 0.125 * double(c));
    if (b > 4096) CHECK(c - b < 4096 + c / 8);
  }
}

TEST_CASE("device allocator: a buffer freed on a stream is reused at once on the same stream") {
  FakeDriver d;
  {
    CachingAllocator a(d);
    void* p = a.allocate(1000, stream(0));
    d.queue(stream(0));  // a kernel uses p, not finished
    a.deallocate(p, 1000, stream(0));
    CHECK(a.cached_bytes() == 1024);
    void* q = a.allocate(900, stream(0));  // same class, same stream: no event needed
    CHECK(q == p);
    CHECK(d.allocations == 1);
    CHECK(a.cache_hits() == 1);
    a.deallocate(q, 900, stream(0));
    void* r = a.allocate(2000, stream(0));  // other class: a new buffer
    CHECK(r != p);
    CHECK(d.allocations == 2);
    a.deallocate(r, 2000, stream(0));
  }
  CHECK(d.frees == 2);
}

TEST_CASE("device allocator: another stream gets a freed buffer only after the free's event completed") {
  FakeDriver d;
  CachingAllocator a(d);
  void* p = a.allocate(4096, stream(0));
  d.queue(stream(0));
  a.deallocate(p, 4096, stream(0));
  void* q = a.allocate(4096, stream(1));  // stream 0's work still pending: fresh buffer
  CHECK(q != p);
  CHECK(d.allocations == 2);
  a.deallocate(q, 4096, stream(1));

  // Work queued on stream 0 after the free does not hold the buffer back once the free's own
  // event is done; a third stream then takes the oldest completed free, p.
  d.complete(stream(0));
  d.queue(stream(0));
  void* r = a.allocate(4096, stream(2));
  CHECK(r == p);
  CHECK(d.allocations == 2);
  a.deallocate(r, 4096, stream(2));
}

TEST_CASE("device allocator: a pending free is never handed to another stream") {
  FakeDriver d;
  CachingAllocator a(d);
  std::vector<void*> mine;
  for (int i = 0; i < 4; ++i) mine.push_back(a.allocate(100000, stream(0)));
  d.queue(stream(0));
  for (void* p : mine) a.deallocate(p, 100000, stream(0));
  std::set<void*> theirs;
  for (int i = 0; i < 4; ++i) {
    void* p = a.allocate(100000, stream(1));
    CHECK(std::find(mine.begin(), mine.end(), p) == mine.end());
    theirs.insert(p);
  }
  CHECK(d.allocations == 8);
  for (void* p : theirs) a.deallocate(p, 100000, stream(1));
  d.complete(stream(0));
  void* p = a.allocate(100000, stream(1));  // own stream's buffers first
  CHECK(theirs.count(p) == 1);
  a.deallocate(p, 100000, stream(1));
}

TEST_CASE("device allocator: live and peak count requested bytes, cached and reserved count classes") {
  FakeDriver d;
  CachingAllocator a(d);
  void* p = a.allocate(1000, stream(0));
  void* q = a.allocate(5000, stream(0));
  CHECK(a.live_bytes() == 6000);
  CHECK(a.peak_bytes() == 6000);
  CHECK(a.reserved_bytes() == 1024 + 8192);
  a.deallocate(q, 5000, stream(0));
  CHECK(a.live_bytes() == 1000);
  CHECK(a.peak_bytes() == 6000);
  CHECK(a.cached_bytes() == 8192);
  a.reset_peak();
  CHECK(a.peak_bytes() == 1000);
  void* r = a.allocate(3000, stream(0));
  CHECK(a.peak_bytes() == 4000);
  a.deallocate(r, 3000, stream(0));
  a.deallocate(p, 1000, stream(0));
  CHECK(a.live_bytes() == 0);
  CHECK(a.cached_bytes() == 1024 + 8192 + 4096);
  CHECK(a.reserved_bytes() == 1024 + 8192 + 4096);
}

TEST_CASE("device allocator: release_cache waits for pending frees and returns every cached buffer") {
  FakeDriver d;
  CachingAllocator a(d);
  void* p = a.allocate(700, stream(0));
  void* q = a.allocate(70000, stream(1));
  void* kept = a.allocate(64, stream(0));
  d.queue(stream(0));
  d.queue(stream(1));
  a.deallocate(p, 700, stream(0));
  a.deallocate(q, 70000, stream(1));
  a.release_cache();
  CHECK(d.waits == 2);
  CHECK(d.frees == 2);
  CHECK(d.blocks.size() == 1);
  CHECK(a.cached_bytes() == 0);
  CHECK(a.reserved_bytes() == 512);
  CHECK(a.live_bytes() == 64);
  a.deallocate(kept, 64, stream(0));
}

TEST_CASE("device allocator: out of memory frees completed cached buffers and retries, else bad_alloc") {
  FakeDriver d(3 * 8192);
  CachingAllocator a(d);
  void* p = a.allocate(8192, stream(0));
  void* q = a.allocate(8192, stream(0));
  a.deallocate(p, 8192, stream(0));  // stream 0 idle: its event is complete
  d.queue(stream(0));
  a.deallocate(q, 8192, stream(0));       // pending
  void* r = a.allocate(8192, stream(0));  // same stream: takes q at once
  CHECK(r == q);
  void* big = a.allocate(16384, stream(1));  // budget 24 KiB: 8 KiB cached p is freed first
  CHECK(d.frees == 1);
  CHECK(a.cached_bytes() == 0);
  CHECK_THROWS_AS(a.allocate(8192, stream(1)), std::bad_alloc);
  CHECK_THROWS_WITH_AS(a.allocate(8192, stream(1)),
                       "cuda:3: out of device memory: 8.00 KiB requested, 24.00 KiB in tensors, 24.00 KiB held by the "
                       "caching allocator",
                       pw::OutOfMemory);
  CHECK(a.live_bytes() == 8192 + 16384);
  a.deallocate(r, 8192, stream(0));
  a.deallocate(big, 16384, stream(1));
}

// S stages on S streams of one card: near the limit the cache may hold buffers freed on
// other streams whose work is still queued; they are waited for, not reported as out of memory.
TEST_CASE("device allocator: out of memory waits for buffers pending on other streams before giving up") {
  FakeDriver d(2 * 8192);
  CachingAllocator a(d);
  void* p = a.allocate(8192, stream(0));
  void* q = a.allocate(8192, stream(0));
  d.queue(stream(0));
  a.deallocate(p, 8192, stream(0));       // pending on stream 0
  void* r = a.allocate(8192, stream(1));  // waits for p's free, returns it to the driver, retries
  CHECK(d.waits == 1);
  CHECK(d.frees == 1);
  CHECK(a.cached_bytes() == 0);
  CHECK(a.reserved_bytes() == 2 * 8192);
  CHECK_THROWS_AS(a.allocate(512, stream(1)), pw::OutOfMemory);  // nothing cached: no wait
  CHECK(d.waits == 1);
  a.deallocate(q, 8192, stream(0));
  a.deallocate(r, 8192, stream(1));
}

TEST_CASE("device allocator: freeing with the wrong size or twice is a bug caught at once") {
  FakeDriver d;
  CachingAllocator a(d);
  void* p = a.allocate(1000, stream(0));
  CHECK_THROWS(a.deallocate(p, 5000, stream(0)));
  a.deallocate(p, 1000, stream(0));
  CHECK_THROWS(a.deallocate(p, 1000, stream(0)));
}

TEST_CASE("device allocator: a free on a failed device sets the buffer aside instead of throwing") {
  FakeDriver d;
  {
    CachingAllocator a(d);
    void* kept = a.allocate(1000, stream(0));
    void* p = a.allocate(3000, stream(0));
    d.broken = true;
    CHECK_NOTHROW(a.deallocate(p, 3000, stream(0)));
    CHECK(a.live_bytes() == 1000);
    CHECK(a.cached_bytes() == 0);
    CHECK(a.set_aside_bytes() == 4096);
    CHECK(a.device_error() == "CUDA: cudaEventRecord: an illegal memory access was encountered");
    d.broken = false;
    void* q = a.allocate(3000, stream(0));  // never the buffer set aside
    CHECK(q != p);
    CHECK(d.allocations == 3);
    a.deallocate(q, 3000, stream(0));
    a.deallocate(kept, 1000, stream(0));
    CHECK(a.device_error() == "CUDA: cudaEventRecord: an illegal memory access was encountered");
    CHECK(d.live_events == 2);
  }
  CHECK(d.frees == 3);  // the set-aside buffer is returned with the allocator
}

TEST_CASE("a tensor destroyed on a failed device does not terminate the process") {
  FakeDriver d;
  CachingAllocator a(d);
  StreamMemory m(a, stream(0));
  {
    pw::exec::Tensor t({4, 8}, m);
    d.broken = true;
  }
  CHECK(a.live_bytes() == 0);
  CHECK(a.set_aside_bytes() == 512);
  d.broken = false;
}

TEST_CASE("tensors on a stream view: device, accounting, fill and clone through the resource") {
  FakeDriver d;
  {
    CachingAllocator a(d);
    StreamMemory mem(a, stream(5));
    {
      pw::exec::Tensor t({3, 5}, mem);
      CHECK(t.device() == pw::exec::Device::cuda(3));
      CHECK(t.device().to_string() == "cuda:3");
      CHECK(a.live_bytes() == 60);
      t.fill(2.5f);  // the fake device is host memory: the fill is readable here
      pw::exec::Tensor c = t.clone();
      CHECK(c.device() == pw::exec::Device::cuda(3));
      CHECK(c.data() != t.data());
      for (int64_t i = 0; i < c.numel(); ++i) CHECK(c.data()[i] == 2.5f);
      CHECK(a.live_bytes() == 120);
    }
    CHECK(a.live_bytes() == 0);
    CHECK(a.peak_bytes() == 120);
    pw::exec::Tensor host({2});
    CHECK(host.device() == pw::exec::Device::cpu());
    CHECK(host.device().to_string() == "cpu");
  }
  CHECK(d.blocks.empty());
}

TEST_CASE("a tensor handed to another stream slot is freed there: its producer reuses it only after that free") {
  FakeDriver d;
  {
    CachingAllocator a(d);
    StreamMemory producer(a, stream(0), pw::exec::Device::cuda(3, 0));
    StreamMemory consumer(a, stream(1), pw::exec::Device::cuda(3, 1));
    void* buf = nullptr;
    {
      pw::exec::Tensor t({256}, producer);
      buf = t.data();
      t.fill(1.0f);  // the producer's kernel (queued on stream 0)
      CHECK(t.device() == pw::exec::Device::cuda(3, 0));
      t.rebind(consumer);  // the hand-off, after the consumer's stream waited for the producer's fence
      CHECK(t.device() == pw::exec::Device::cuda(3, 1));
      d.queue(stream(1));                     // the consumer reads it (not finished)
    }                                         // freed on the consumer's stream
    pw::exec::Tensor again({256}, producer);  // the producer's next buffer of that class
    CHECK(again.data() != buf);               // the consumer may still read buf
    d.complete(stream(1));
    pw::exec::Tensor later({256}, producer);
    CHECK(later.data() == buf);  // the consumer's free completed: reusable anywhere
    pw::exec::Tensor host({4});
    CHECK_THROWS(host.rebind(consumer));  // a host buffer never joins a device's pool
  }
}
