#include "exec/cuda/caching_allocator.h"

#include <algorithm>
#include <exception>
#include <new>

#include "models/error.h"
#include "models/human_units.h"

namespace pw::exec::cuda {

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes <= 4096) {
    size_t c = kMinBlock;
    while (c < bytes) c <<= 1;
    return c;
  }
  size_t pow2 = 4096;
  while (pow2 < bytes) pow2 <<= 1;
  const size_t step = std::max<size_t>(4096, pow2 / 8);
  return (bytes + step - 1) / step * step;
}

CachingAllocator::~CachingAllocator() {
  try {
    release_cache();
  } catch (...) {  // a failed device: its remaining buffers go with the process
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (void* p : set_aside_) {
    try {
      driver_.raw_free(p);
    } catch (...) {}
  }
  for (EventHandle e : spare_events_) driver_.destroy_event(e);
}

void CachingAllocator::recycle_event(EventHandle e) { spare_events_.push_back(e); }

void* CachingAllocator::take_cached(size_t cls, StreamHandle stream) {
  auto it = free_.find(cls);
  if (it == free_.end() || it->second.empty()) return nullptr;
  std::vector<FreeBlock>& list = it->second;
  // The most recently freed buffer of the same stream first (its lines may still be in L2),
  // then any buffer whose free has completed on its stream.
  auto pick = list.end();
  for (auto b = list.rbegin(); b != list.rend(); ++b)
    if (b->freed_on == stream) {
      pick = std::next(b).base();
      break;
    }
  if (pick == list.end())
    for (auto b = list.begin(); b != list.end(); ++b)
      if (driver_.event_done(b->done)) {
        pick = b;
        break;
      }
  if (pick == list.end()) return nullptr;
  void* p = pick->p;
  recycle_event(pick->done);
  list.erase(pick);
  cached_ -= static_cast<int64_t>(cls);
  ++cache_hits_;
  return p;
}

void CachingAllocator::free_cached_blocks(bool wait) {
  for (auto& [cls, list] : free_) {
    auto keep = list.begin();
    for (auto b = list.begin(); b != list.end(); ++b) {
      if (wait) driver_.wait_event(b->done);
      if (wait || driver_.event_done(b->done)) {
        driver_.raw_free(b->p);
        recycle_event(b->done);
        cached_ -= static_cast<int64_t>(cls);
        reserved_ -= static_cast<int64_t>(cls);
      } else {
        *keep++ = *b;
      }
    }
    list.erase(keep, list.end());
  }
}

void* CachingAllocator::allocate(size_t bytes, StreamHandle stream) {
  PW_CHECK(bytes >= 1, "device allocation of 0 bytes");
  const size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* p = take_cached(cls, stream);
  if (!p) {
    p = driver_.raw_allocate(cls);
    if (!p) {  // first the cached buffers whose frees have completed, no waiting
      free_cached_blocks(false);
      p = driver_.raw_allocate(cls);
    }
    if (!p && cached_ > 0) {  // then the rest, once other streams' work with them is done
      free_cached_blocks(true);
      p = driver_.raw_allocate(cls);
    }
    if (!p)
      throw OutOfMemory(driver_.device().to_string() +
                        ": out of device memory: " + models::human_bytes(static_cast<double>(cls)) + " requested, " +
                        models::human_bytes(static_cast<double>(live_)) + " in tensors, " +
                        models::human_bytes(static_cast<double>(reserved_)) + " held by the caching allocator");
    ++driver_allocations_;
    reserved_ += static_cast<int64_t>(cls);
  }
  in_use_.emplace(p, cls);
  live_ += static_cast<int64_t>(bytes);
  peak_ = std::max(peak_, live_);
  return p;
}

void CachingAllocator::deallocate(void* p, size_t bytes, StreamHandle stream) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_use_.find(p);
  PW_CHECK(it != in_use_.end(), "device buffer freed twice or not from this allocator");
  const size_t cls = it->second;
  PW_CHECK(size_class(bytes) == cls, "device buffer freed with a size other than its allocation's");
  in_use_.erase(it);
  live_ -= static_cast<int64_t>(bytes);
  PW_CHECK(live_ >= 0, "device allocator live bytes went negative");
  try {
    free_[cls].push_back({p, stream, free_event(stream)});
    cached_ += static_cast<int64_t>(cls);
  } catch (const std::exception& e) {
    if (device_error_.empty()) device_error_ = e.what();
    set_aside_.push_back(p);
    set_aside_bytes_ += static_cast<int64_t>(cls);
  }
}

EventHandle CachingAllocator::free_event(StreamHandle stream) {
  EventHandle e;
  if (spare_events_.empty()) {
    e = driver_.create_event();
  } else {
    e = spare_events_.back();
    spare_events_.pop_back();
  }
  try {
    driver_.record_event(e, stream);
  } catch (...) {
    recycle_event(e);
    throw;
  }
  return e;
}

std::string CachingAllocator::device_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return device_error_;
}

int64_t CachingAllocator::set_aside_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return set_aside_bytes_;
}

int64_t CachingAllocator::live_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

int64_t CachingAllocator::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

int64_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

int64_t CachingAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

int64_t CachingAllocator::driver_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return driver_allocations_;
}

int64_t CachingAllocator::cache_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_hits_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = live_;
}

void CachingAllocator::release_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  free_cached_blocks(true);
  free_.clear();
}

void StreamMemory::fill(float* p, int64_t n, float v) { alloc_.driver().fill(p, n, v, stream_); }

void StreamMemory::copy(void* dst, const void* src, size_t bytes) { alloc_.driver().copy(dst, src, bytes, stream_); }

}  // namespace pw::exec::cuda
