// fp32 tensors on 64-byte aligned buffers from a counting, reusing allocator.
//
// Allocator: thread-safe. Buffers are rounded up to a size class (powers of two up to 4 KiB,
// then steps of 1/8 of the next power of two, see tensor.cc) and kept on a free list for reuse,
// so repeated micro-batches of the same shapes do not touch the system allocator (memory taken
// from the system passes the installed SystemMemoryGate first, if any). It counts
// live bytes (requested sizes of buffers in use) and the peak of live bytes, which is what the
// profiler and the executor report as memory. Cached free buffers are not "live".
//
// Per-thread reuse (the global allocator only): a buffer freed by a thread goes to that
// thread's own free list (up to kThreadCacheDepth buffers per size class, the rest to the
// shared list) and that thread's next allocation of the class takes it back first. With one
// shared list, pipeline workers on different cores kept trading their scratch buffers, so a
// worker wrote into lines that sat in the other core's cache: a 2-stage gpt step ran 10% longer
// on threads than with the per-thread lists (bench/RESULTS.md "ranks vs threads").
// A thread's list goes back to the shared one when the thread ends. release_cache() returns
// every thread's list, not only the caller's: a pipeline's worker threads keep their lists
// while they run, and under a memory limit an allocation that fails must be able to reclaim
// them (each list has its own mutex, taken uncontended on the owner's allocate/deallocate).
//
// Tensor: owns one buffer (move-only); shape is row-major, dims >= 1. Moving a tensor moves
// the buffer (zero-copy hand-off between pipeline stages).
//
// Devices. Every buffer comes from a MemoryResource, which says on which Device it lives; the
// Allocator above is the CPU's. A tensor on another device (a backend's resource, such as the
// CUDA backend's caching allocator in exec/cuda/) holds a pointer in that device's address
// space: data() must then be handed only to that backend's kernels, never dereferenced here.
// fill() and clone() go through the resource and work on any device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace pw::exec {

// Where a buffer lives and where work on it is ordered: the host (cpu) or one accelerator of a
// backend (cuda, with its index) and a stream slot on it. Slot k of a CUDA device is its own
// queue of work (a CUDA stream with its own cuBLASLt handle and workspace, exec/cuda/
// cuda_device.h) over the device's one memory pool; slot 0 is the queue single-device training
// uses, and a pipeline gives each of its stages on one GPU a slot of its own. Two devices are
// equal only with equal slots: a tensor is used on the slot it belongs to, and moves to another
// slot only through exec/device_streams.h's hand-off.
struct Device {
  enum class Kind : uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;
  int stream = 0;  // stream slot (cuda only; always 0 on the host)

  static Device cpu() { return {}; }
  static Device cuda(int index, int stream = 0) { return {Kind::cuda, index, stream}; }
  bool is_cpu() const { return kind == Kind::cpu; }
  // The same accelerator (or both the host), whatever the stream slots.
  bool same_memory(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator==(const Device&) const = default;
  // "cpu", "cuda:<index>" (slot 0) or "cuda:<index>/stream<k>".
  std::string to_string() const;
};

// A source of buffers on one device, with the live/peak accounting the profiler and the memory
// reports read (requested bytes of buffers in use; cached free buffers are not live).
// Implementations are thread-safe.
class MemoryResource {
 public:
  virtual ~MemoryResource() = default;
  virtual Device device() const = 0;
  // A buffer of at least `bytes` bytes, aligned for float4 access at least. Throws
  // OutOfMemory (models/error.h, a std::bad_alloc) when the memory is exhausted.
  virtual void* allocate(size_t bytes) = 0;
  // `bytes` must be the size passed to allocate().
  virtual void deallocate(void* p, size_t bytes) = 0;
  virtual int64_t live_bytes() const = 0;
  virtual int64_t peak_bytes() const = 0;
  // Starts a new peak measurement window at the current live bytes.
  virtual void reset_peak() = 0;
  // Returns cached free buffers to the system.
  virtual void release_cache() = 0;
  // Buffer operations on this resource's device: p[0, n) = v; dst = src (bytes, no overlap).
  virtual void fill(float* p, int64_t n, float v) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
};

// What the host allocators ask before they take memory from the system, so that a limit the
// system would enforce by killing the process (a cgroup's: exec/machine/cgroup_guard.h) is met
// with the allocator's own failure path instead: return the cache, retry, OutOfMemory.
class SystemMemoryGate {
 public:
  virtual ~SystemMemoryGate() = default;
  // Whether `bytes` more may be taken from the system now.
  virtual bool admit(int64_t bytes) = 0;
  // `bytes` admitted earlier went back to the system.
  virtual void released(int64_t bytes) = 0;
  // Words appended to the out-of-memory message after a refusal: " (its cgroup allows ...)".
  virtual std::string refusal() const = 0;
};

class Allocator : public MemoryResource {
 public:
  static constexpr size_t kAlignment = 64;

  Allocator() = default;
  ~Allocator() override;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  Device device() const override { return Device::cpu(); }
  // Returns a 64-byte aligned buffer of at least `bytes` bytes: a cached free buffer of its size
  // class, or a new one; when the system has none, after returning the cache (release_cache)
  // once. Throws OutOfMemory.
  void* allocate(size_t bytes) override;
  // `bytes` must be the size passed to allocate().
  void deallocate(void* p, size_t bytes) override;

  int64_t live_bytes() const override;
  int64_t peak_bytes() const override;
  // Starts a new peak measurement window at the current live bytes.
  void reset_peak() override;
  // Returns cached free buffers to the system: the shared list and every thread's own list.
  void release_cache() override;
  // Bytes (size classes) of the cached free buffers: the shared list and every thread's.
  int64_t cached_bytes() const;
  void fill(float* p, int64_t n, float v) override;
  void copy(void* dst, const void* src, size_t bytes) override;

  static constexpr size_t kThreadCacheDepth = 16;

  // The process-wide allocator used by Tensor unless another is given.
  static Allocator& global();
  // Makes every host allocator ask `gate` (which must outlive them; nullptr: none, the
  // default). Install it before the threads that allocate start.
  static void set_system_gate(SystemMemoryGate* gate);

 private:
  static size_t size_class(size_t bytes);
  static void* system_alloc(size_t cls);  // nullptr when the system or the gate refuses
  static void* system_map(size_t cls);    // system_alloc without the gate
  static void system_free(size_t cls, void* p);
  void* take_shared(size_t cls);  // caller holds mu_; nullptr when the class's list is empty
  void put_shared(size_t cls, void* p);
  struct ThreadCache;
  friend struct ThreadCache;
  struct CacheRegistry;  // every live ThreadCache (tensor.cc)
  static CacheRegistry& cache_registry();
  static ThreadCache& thread_cache();

  bool thread_cached_ = false;  // only the global allocator, which is never destroyed
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  int64_t live_ = 0;
  int64_t peak_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape, MemoryResource& alloc = Allocator::global());
  // Zero-filled.
  static Tensor zeros(std::vector<int64_t> shape, MemoryResource& alloc = Allocator::global());
  ~Tensor();
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Deep copy (new buffer from the same allocator).
  Tensor clone() const;

  float* data() { return data_; }
  const float* data() const { return data_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * static_cast<int64_t>(sizeof(float)); }
  bool empty() const { return data_ == nullptr; }
  // The device of the buffer (cpu for an empty tensor) and the resource it came from.
  Device device() const { return alloc_ ? alloc_->device() : Device::cpu(); }
  MemoryResource* resource() const { return alloc_; }
  // Hands the buffer to `r`, which frees it from now on: `r` must be another view of the same
  // pool (a stream slot of the same CUDA device, Device::same_memory), and the caller must have
  // ordered r's queue after every use of the buffer queued so far (exec/device_streams.h).
  void rebind(MemoryResource& r);
  void fill(float v);
  // Same buffer, new shape with the same element count (throws InputError otherwise).
  void reshape(std::vector<int64_t> shape);
  std::string shape_string() const;

 private:
  void release();
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  float* data_ = nullptr;
  MemoryResource* alloc_ = nullptr;
};

}  // namespace pw::exec
