#include "exec/tensor.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "exec/huge_pages.h"
#include "models/error.h"
#include "models/human_units.h"

namespace pw::exec {

// The calling thread's free lists of the global allocator (see tensor.h: per-thread reuse).
// Every live list is in a registry, so that release_cache() on any thread can return it; `mu`
// guards `free` (the owner takes it uncontended). Lock order: registry, then a list's mu, then
// the allocator's mu_.
struct Allocator::ThreadCache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free;
  ThreadCache();
  ~ThreadCache();
};

struct Allocator::CacheRegistry {
  std::mutex mu;
  std::vector<ThreadCache*> caches;
};

Allocator::CacheRegistry& Allocator::cache_registry() {
  static auto* r = new CacheRegistry();  // never destroyed: threads may end during static teardown
  return *r;
}

Allocator::ThreadCache::ThreadCache() {
  std::lock_guard<std::mutex> lock(cache_registry().mu);
  cache_registry().caches.push_back(this);
}

Allocator::ThreadCache::~ThreadCache() {
  Allocator::CacheRegistry& r = cache_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.caches.erase(std::find(r.caches.begin(), r.caches.end(), this));
  Allocator& g = Allocator::global();
  std::lock_guard<std::mutex> mine(mu);
  for (auto& [cls, list] : free)
    for (void* p : list) g.put_shared(cls, p);
}

Allocator::ThreadCache& Allocator::thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

std::string Device::to_string() const {
  if (kind == Kind::cpu) return "cpu";
  std::string s = "cuda:" + std::to_string(index);
  return stream == 0 ? s : s + "/stream" + std::to_string(stream);
}

Allocator::~Allocator() { release_cache(); }

void Allocator::fill(float* p, int64_t n, float v) { std::fill(p, p + n, v); }

void Allocator::copy(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

size_t Allocator::size_class(size_t bytes) {
  if (bytes <= 4096) {
    size_t c = kAlignment;
    while (c < bytes) c <<= 1;
    return c;
  }
  // Above 4 KiB: round up to 1/8 of the next power of two (at most 12.5% slack), 4 KiB aligned.
  size_t pow2 = 4096;
  while (pow2 < bytes) pow2 <<= 1;
  size_t step = std::max<size_t>(4096, pow2 / 8);
  return (bytes + step - 1) / step * step;
}

void* Allocator::take_shared(size_t cls) {
  auto it = free_.find(cls);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  return p;
}

void Allocator::put_shared(size_t cls, void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  free_[cls].push_back(p);
}

namespace {
size_t huge_rounded(size_t cls) { return (cls + kHugePage - 1) / kHugePage * kHugePage; }

// The bytes a buffer of class `cls` takes from the system (what the cgroup guard counts).
size_t system_bytes(size_t cls) { return cls < kHugePage ? cls : huge_rounded(cls); }

std::atomic<SystemMemoryGate*> g_gate{nullptr};

// Set when the calling thread's last system_alloc was refused by the gate, for the
// out-of-memory message.
thread_local bool t_gate_refused = false;

// AddressSanitizer reports overflows only of buffers on its heap: under it, large buffers keep
// coming from aligned_alloc. GCC says so with __SANITIZE_ADDRESS__, clang 14 (the fuzz builds)
// only through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapLargeBuffers = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMapLargeBuffers = false;
#else
constexpr bool kMapLargeBuffers = true;
#endif
#else
constexpr bool kMapLargeBuffers = true;
#endif

}  // namespace

void* Allocator::system_alloc(size_t cls) {
  SystemMemoryGate* gate = g_gate.load(std::memory_order_acquire);
  const auto bytes = static_cast<int64_t>(system_bytes(cls));
  t_gate_refused = gate && !gate->admit(bytes);
  if (t_gate_refused) return nullptr;
  void* p = system_map(cls);
  if (!p && gate) gate->released(bytes);
  return p;
}

void Allocator::set_system_gate(SystemMemoryGate* gate) { g_gate.store(gate, std::memory_order_release); }

void* Allocator::system_map(size_t cls) {
  if (cls < kHugePage) return std::aligned_alloc(kAlignment, cls);
  // Large tensors (weights, optimizer state, big activations) on transparent huge pages: with
  // THP in "madvise" mode (Debian's default) they would otherwise sit on 4 KiB pages, and how
  // their pages land made the same op's time differ by up to 25% from one process to the next.
  // The size is rounded to whole huge pages; accounting stays in requested bytes.
  // Mapped here, not by aligned_alloc: glibc maps size + alignment for an aligned block and
  // keeps the whole span, so every such buffer counted up to 2 MiB twice against ulimit -d (a
  // 2 MiB tensor held 4 MiB of data segment).
  const size_t rounded = huge_rounded(cls);
  void* p = kMapLargeBuffers ? map_huge_aligned(rounded) : std::aligned_alloc(kHugePage, rounded);
  if (p) ::madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void Allocator::system_free(size_t cls, void* p) {
  if (cls < kHugePage || !kMapLargeBuffers) std::free(p);
  else {
    ::munmap(p, huge_rounded(cls));
    // Only unmapped memory is surely uncharged: the C library keeps much of what it is given back.
    if (SystemMemoryGate* gate = g_gate.load(std::memory_order_acquire))
      gate->released(static_cast<int64_t>(huge_rounded(cls)));
  }
}

void* Allocator::allocate(size_t bytes) {
  const size_t cls = size_class(std::max<size_t>(bytes, 1));
  void* reused = nullptr;  // the calling thread's own free buffer of the class first
  if (thread_cached_) {
    ThreadCache& mine = thread_cache();
    std::lock_guard<std::mutex> lock(mine.mu);
    auto it = mine.free.find(cls);
    if (it != mine.free.end() && !it->second.empty()) {
      reused = it->second.back();
      it->second.pop_back();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_ += static_cast<int64_t>(bytes);
    peak_ = std::max(peak_, live_);
    if (!reused) reused = take_shared(cls);
  }
  if (reused) return reused;
  void* p = system_alloc(cls);
  if (!p) {
    // Buffers of other sizes the cache holds count against a memory limit as much as live
    // ones: return them (the shared list and every thread's) and try once more.
    release_cache();
    p = system_alloc(cls);
  }
  if (!p) {
    std::lock_guard<std::mutex> lock(mu_);
    live_ -= static_cast<int64_t>(bytes);
    SystemMemoryGate* gate = g_gate.load(std::memory_order_acquire);
    const std::string limit = t_gate_refused && gate ? gate->refusal() : std::string();
    throw OutOfMemory("host: out of memory: " + models::human_bytes(static_cast<double>(cls)) + " requested, " +
                      models::human_bytes(static_cast<double>(live_)) + " in tensors" + limit);
  }
  return p;
}

void Allocator::deallocate(void* p, size_t bytes) {
  if (!p) return;
  const size_t cls = size_class(std::max<size_t>(bytes, 1));
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_ -= static_cast<int64_t>(bytes);
    PW_CHECK(live_ >= 0, "allocator live bytes went negative");
    if (!thread_cached_) {
      free_[cls].push_back(p);
      return;
    }
  }
  {
    ThreadCache& mine = thread_cache();
    std::lock_guard<std::mutex> lock(mine.mu);
    std::vector<void*>& list = mine.free[cls];
    if (list.size() < kThreadCacheDepth) {
      list.push_back(p);
      return;
    }
  }
  put_shared(cls, p);
}

int64_t Allocator::live_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

int64_t Allocator::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void Allocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = live_;
}

void Allocator::release_cache() {
  // Every list is taken under its lock and freed after: no lock is held across the frees.
  std::vector<std::unordered_map<size_t, std::vector<void*>>> taken;
  if (thread_cached_) {
    std::lock_guard<std::mutex> registry(cache_registry().mu);
    for (ThreadCache* c : cache_registry().caches) {
      std::lock_guard<std::mutex> lock(c->mu);
      taken.push_back(std::move(c->free));
      c->free.clear();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.push_back(std::move(free_));
    free_.clear();
  }
  for (const auto& lists : taken)
    for (const auto& [cls, list] : lists)
      for (void* p : list) system_free(cls, p);
}

int64_t Allocator::cached_bytes() const {
  const auto sum = [](const std::unordered_map<size_t, std::vector<void*>>& lists) {
    int64_t n = 0;
    for (const auto& [cls, list] : lists) n += static_cast<int64_t>(cls * list.size());
    return n;
  };
  int64_t n = 0;
  if (thread_cached_) {
    std::lock_guard<std::mutex> registry(cache_registry().mu);
    for (ThreadCache* c : cache_registry().caches) {
      std::lock_guard<std::mutex> lock(c->mu);
      n += sum(c->free);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  return n + sum(free_);
}

Allocator& Allocator::global() {
  static Allocator* a = [] {
    auto* g = new Allocator();  // never destroyed: tensors may outlive static teardown
    g->thread_cached_ = true;   // so a thread cache's destructor may return buffers at any exit
    return g;
  }();
  return *a;
}

Tensor::Tensor(std::vector<int64_t> shape, MemoryResource& alloc) : shape_(std::move(shape)), alloc_(&alloc) {
  numel_ = 1;
  for (int64_t d : shape_) {
    if (d < 1) throw InputError("tensor shape " + shape_string() + ": dimensions must be >= 1");
    numel_ *= d;
  }
  data_ = static_cast<float*>(alloc_->allocate(static_cast<size_t>(bytes())));
}

Tensor Tensor::zeros(std::vector<int64_t> shape, MemoryResource& alloc) {
  Tensor t(std::move(shape), alloc);
  t.fill(0.0f);
  return t;
}

Tensor::~Tensor() { release(); }

void Tensor::release() {
  if (data_) alloc_->deallocate(data_, static_cast<size_t>(bytes()));
  data_ = nullptr;
}

Tensor::Tensor(Tensor&& o) noexcept : shape_(std::move(o.shape_)), numel_(o.numel_), data_(o.data_), alloc_(o.alloc_) {
  o.data_ = nullptr;
  o.numel_ = 0;
}

Tensor& Tensor::operator=(Tensor&& o) noexcept {
  if (this != &o) {
    release();
    shape_ = std::move(o.shape_);
    numel_ = o.numel_;
    data_ = o.data_;
    alloc_ = o.alloc_;
    o.data_ = nullptr;
    o.numel_ = 0;
  }
  return *this;
}

Tensor Tensor::clone() const {
  PW_CHECK(data_ != nullptr, "clone of an empty tensor");
  Tensor t(shape_, *alloc_);
  alloc_->copy(t.data_, data_, static_cast<size_t>(bytes()));
  return t;
}

void Tensor::rebind(MemoryResource& r) {
  PW_CHECK(!alloc_ || alloc_->device().same_memory(r.device()),
           "rebind of a tensor on " + (alloc_ ? alloc_->device().to_string() : std::string("cpu")) +
               " to a resource on " + r.device().to_string());
  if (alloc_) alloc_ = &r;
}

void Tensor::fill(float v) {
  if (alloc_) alloc_->fill(data_, numel_, v);
}

void Tensor::reshape(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != numel_) throw InputError("cannot reshape tensor " + shape_string() + " to a different element count");
  shape_ = std::move(shape);
}

std::string Tensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape_.size(); ++i) s += (i ? "x" : "") + std::to_string(shape_[i]);
  return s + "]";
}

}  // namespace pw::exec
