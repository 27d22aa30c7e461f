// Device tensors on a real GPU: the CUDA runtime plugged into the caching policy (needs a GPU).
#include <doctest/doctest.h>

#include "exec/cuda/cuda_device.h"
#include "exec/device_ops.h"
#include "tests/exec/cuda/gpu_compare.h"

namespace pw::exec::cuda {
namespace {

TEST_CASE("device tensors: fill, clone, upload and download, live bytes") {
  CudaDevice& dev = CudaDevice::get(0);
  const int64_t live0 = dev.allocator().live_bytes();
  {
    Tensor t({3, 1000}, dev.memory());
    CHECK(t.device() == Device::cuda(0));
    CHECK(dev.allocator().live_bytes() == live0 + 12000);
    t.fill(1.5f);
    Tensor c = t.clone();
    t.fill(0.0f);
    const Tensor hc = to_host(c), ht = to_host(t);
    for (int64_t i = 0; i < hc.numel(); ++i) {
      CHECK(hc.data()[i] == 1.5f);
      CHECK(ht.data()[i] == 0.0f);
    }
    const Tensor h = testing::uniform({7, 9}, 5);
    const Tensor back = to_host(to_device(h, dev));
    CHECK(testing::bit_equal(back, h));
  }
  CHECK(dev.allocator().live_bytes() == live0);
  CHECK(dev.allocator().peak_bytes() >= live0 + 24000);
}

TEST_CASE("device memory: the card's total, as train's up-front check reads it") {
  const int64_t total = device_total_memory_bytes(Device::cuda(0));
  CHECK(total == CudaDevice::get(0).total_memory_bytes());
  CHECK(total >= (int64_t{8} << 30));    // every card we train on has at least 8 GiB
  CHECK(total <= (int64_t{512} << 30));  // and no card has half a TiB
}

TEST_CASE("device allocator: a freed buffer is reused on the compute stream") {
  CudaDevice& dev = CudaDevice::get(0);
  const int64_t hits = dev.allocator().cache_hits();
  const void* first;
  {
    Tensor t({123457}, dev.memory());
    first = t.data();
  }
  Tensor u({123457}, dev.memory());
  CHECK(u.data() == first);
  CHECK(dev.allocator().cache_hits() == hits + 1);
  dev.allocator().release_cache();
  CHECK(dev.allocator().cached_bytes() == 0);
}

}  // namespace
}  // namespace pw::exec::cuda
