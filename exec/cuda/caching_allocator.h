// The caching policy of a device's memory, over an abstract driver (no CUDA types here, so the
// policy is tested on the host with a fake driver; exec/cuda/cuda_driver.h plugs the CUDA
// runtime in).
//
// Streams and events are the driver's opaque handles. A buffer is allocated for use on a
// stream and freed on a stream; work queued on a stream runs in order, so:
// - a freed buffer is handed again at once to the stream it was freed on (work queued later on
//   that stream runs after the work that used it);
// - it is handed to ANOTHER stream only once the event recorded on the freeing stream at the
//   free has completed (the device has finished every use queued before the free).
// Sizes are rounded up to a size class (size_class below) and a cached buffer is reused only
// for its own class: no splitting, no merging.
// When the driver is out of memory, every cached buffer whose event has completed is returned
// to the driver and the allocation retried once; then OutOfMemory (a std::bad_alloc naming the
// device, the request, the bytes in tensors and those the allocator holds).
//
// deallocate never throws for the device's sake (it runs in Tensor destructors, also while an
// exception from a failed kernel unwinds the stack): when the driver cannot record the free's
// event (a device in a sticky error state fails every call), the buffer is set aside, neither
// cached nor reused, its first error kept (device_error) and the driver asked to take it back
// when the allocator is destroyed. The error that broke the device thus reaches the user as
// the one exception already in flight, not as std::terminate from a destructor.
//
// Accounting as the CPU Allocator's (exec/tensor.h): live = requested bytes of buffers in use,
// peak = the largest live since the last reset_peak(); cached = class bytes of free buffers;
// reserved = class bytes the driver has handed out and not taken back.
//
// Thread-safe (one mutex). The driver's memory and event calls are made with the mutex held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/tensor.h"

namespace pw::exec::cuda {

using StreamHandle = void*;
using EventHandle = void*;

// What the policy needs of a device.
class DeviceDriver {
 public:
  virtual ~DeviceDriver() = default;
  virtual Device device() const = 0;
  // nullptr when the device is out of memory.
  virtual void* raw_allocate(size_t bytes) = 0;
  virtual void raw_free(void* p) = 0;
  virtual EventHandle create_event() = 0;
  virtual void destroy_event(EventHandle e) = 0;
  // Marks the current end of the stream's queued work.
  virtual void record_event(EventHandle e, StreamHandle s) = 0;
  // Whether everything queued before the recording has finished (does not block).
  virtual bool event_done(EventHandle e) = 0;
  // Blocks the calling host thread until event_done(e).
  virtual void wait_event(EventHandle e) = 0;
  // Queued on stream s: p[0, n) = v; dst = src (bytes, device to device).
  virtual void fill(float* p, int64_t n, float v, StreamHandle s) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes, StreamHandle s) = 0;
};

class CachingAllocator {
 public:
  static constexpr size_t kMinBlock = 512;

  explicit CachingAllocator(DeviceDriver& driver) : driver_(driver) {}
  ~CachingAllocator();  // returns every cached and set-aside buffer (waiting for pending events); never throws
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A buffer of at least `bytes` (>= 1) bytes for use on `stream`. When the driver has no room:
  // frees the completed cached buffers and retries, then waits for the pending ones (frees on
  // other streams whose work is still queued), frees them and retries; then throws OutOfMemory.
  void* allocate(size_t bytes, StreamHandle stream);
  // `p` from allocate() with the same `bytes`; `stream`: the stream the last use was queued on.
  // Throws only for a caller's bug (a size other than the allocation's, a second free).
  void deallocate(void* p, size_t bytes, StreamHandle stream);
  // The driver's first failure in deallocate ("" while there was none) and the bytes (classes)
  // of the buffers set aside for it.
  std::string device_error() const;
  int64_t set_aside_bytes() const;

  int64_t live_bytes() const;
  int64_t peak_bytes() const;
  int64_t cached_bytes() const;
  int64_t reserved_bytes() const;
  // Counts of driver allocations and of buffers handed out from the cache (since creation).
  int64_t driver_allocations() const;
  int64_t cache_hits() const;
  void reset_peak();
  // Returns every cached buffer to the driver, waiting for the events of those still pending.
  void release_cache();

  DeviceDriver& driver() { return driver_; }
  Device device() const { return driver_.device(); }

  // The class a request of `bytes` is rounded to: powers of two from kMinBlock to 4 KiB, then
  // multiples of 1/8 of the next power of two in steps of at least 4 KiB (so at most 12.5%
  // slack above 32 KiB).
  static size_t size_class(size_t bytes);

 private:
  struct FreeBlock {
    void* p;
    StreamHandle freed_on;
    EventHandle done;  // recorded on freed_on at the free
  };
  void* take_cached(size_t cls, StreamHandle stream);  // mutex held; nullptr if none fits
  // Mutex held: returns the cached buffers whose free events have completed to the driver;
  // with `wait`, every cached buffer, waiting for the events still pending.
  void free_cached_blocks(bool wait);
  void recycle_event(EventHandle e);            // mutex held
  EventHandle free_event(StreamHandle stream);  // mutex held; a recorded event, or throws

  DeviceDriver& driver_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<FreeBlock>> free_;
  std::unordered_map<void*, size_t> in_use_;  // buffer -> class
  std::vector<EventHandle> spare_events_;
  std::vector<void*> set_aside_;  // buffers freed while the driver failed (see above)
  std::string device_error_;
  int64_t set_aside_bytes_ = 0;
  int64_t live_ = 0, peak_ = 0, cached_ = 0, reserved_ = 0;
  int64_t driver_allocations_ = 0, cache_hits_ = 0;
};

// A MemoryResource view of a CachingAllocator bound to one stream: tensors made with it are
// allocated for and freed on that stream, and fill/copy are queued on it. The counters are the
// allocator's (all streams together). `device`: the stream slot it stands for (exec/tensor.h:
// Device::stream); the allocator's device when not given.
class StreamMemory : public MemoryResource {
 public:
  StreamMemory(CachingAllocator& alloc, StreamHandle stream) : StreamMemory(alloc, stream, alloc.device()) {}
  StreamMemory(CachingAllocator& alloc, StreamHandle stream, Device device)
      : alloc_(alloc), stream_(stream), device_(device) {}
  Device device() const override { return device_; }
  void* allocate(size_t bytes) override { return alloc_.allocate(bytes, stream_); }
  void deallocate(void* p, size_t bytes) override { alloc_.deallocate(p, bytes, stream_); }
  int64_t live_bytes() const override { return alloc_.live_bytes(); }
  int64_t peak_bytes() const override { return alloc_.peak_bytes(); }
  void reset_peak() override { alloc_.reset_peak(); }
  void release_cache() override { alloc_.release_cache(); }
  void fill(float* p, int64_t n, float v) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  StreamHandle stream() const { return stream_; }

 private:
  CachingAllocator& alloc_;
  StreamHandle stream_;
  Device device_;
};

}  // namespace pw::exec::cuda
