#include "exec/cuda/stream_sync.h"

#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/error.h"

namespace pw::exec::cuda {

namespace {

void check_sync(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

cudaStream_t queue_of(const CudaDevice& d) { return static_cast<cudaStream_t>(d.stream()); }

// Enables direct access of `from` to `to`'s memory once per pair where the hardware allows it
// (a peer copy works without it, staged through the host).
void enable_peer(int from, int to) {
  static std::mutex mu;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried.insert({from, to}).second) return;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || !can) {
    (void)cudaGetLastError();
    return;
  }
  int current = 0;
  check_sync(cudaGetDevice(&current), "cudaGetDevice");
  check_sync(cudaSetDevice(from), "cudaSetDevice");
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) check_sync(e, "cudaDeviceEnablePeerAccess");
  (void)cudaGetLastError();
  check_sync(cudaSetDevice(current), "cudaSetDevice");
}

// The stream a device tensor is ordered on (its resource's).
cudaStream_t home_stream(const Tensor& t) {
  auto* m = dynamic_cast<StreamMemory*>(t.resource());
  PW_CHECK(m != nullptr, "tensor " + t.shape_string() + " on " + t.device().to_string() + " is not a CUDA tensor");
  return static_cast<cudaStream_t>(m->stream());
}

// A copy of `src` (another GPU) on the consumer's GPU, queued on its stream; the source's own
// stream waits for the copy, so freeing the source there (at return) reuses it only afterwards.
Tensor peer_copy(Tensor src, CudaDevice& consumer) {
  const int from = src.device().index;
  enable_peer(consumer.device().index, from);
  Tensor dst(src.shape(), consumer.memory());
  check_sync(cudaMemcpyPeerAsync(dst.data(), consumer.device().index, src.data(), from,
                                 static_cast<size_t>(src.bytes()), queue_of(consumer)),
             "cudaMemcpyPeerAsync");
  cudaEvent_t copied;
  check_sync(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming), "cudaEventCreate");
  // Destroyed on a throw too; CUDA releases it once the wait is satisfied.
  std::unique_ptr<CUevent_st, void (*)(cudaEvent_t)> owned(copied, [](cudaEvent_t e) { (void)cudaEventDestroy(e); });
  check_sync(cudaEventRecord(copied, queue_of(consumer)), "cudaEventRecord");
  check_sync(cudaStreamWaitEvent(home_stream(src), copied, 0), "cudaStreamWaitEvent");
  owned.reset();  // with the consumer's GPU current, as it was recorded
  // The source's free records the allocator's event on its own stream: its GPU must be current.
  check_sync(cudaSetDevice(from), "cudaSetDevice");
  src = Tensor();
  consumer.make_current();
  return dst;
}

}  // namespace

Fence record_fence(CudaDevice& producer) {
  producer.make_current();
  cudaEvent_t e;
  check_sync(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  Fence f(static_cast<void*>(e), [](void* p) { (void)cudaEventDestroy(static_cast<cudaEvent_t>(p)); });
  check_sync(cudaEventRecord(e, queue_of(producer)), "cudaEventRecord");
  return f;
}

void hand_over(std::vector<Tensor>& tensors, const Fence& fence, CudaDevice& consumer) {
  consumer.make_current();
  if (fence)
    check_sync(cudaStreamWaitEvent(queue_of(consumer), static_cast<cudaEvent_t>(fence.get()), 0),
               "cudaStreamWaitEvent");
  for (Tensor& t : tensors) {
    if (t.empty() || t.device() == consumer.device()) continue;
    PW_CHECK(!t.device().is_cpu(), "hand_over of a host tensor to " + consumer.device().to_string());
    if (t.device().same_memory(consumer.device())) t.rebind(consumer.memory());
    else t = peer_copy(std::move(t), consumer);
  }
}

std::string device_name(const CudaDevice& dev) {
  cudaDeviceProp prop{};
  check_sync(cudaGetDeviceProperties(&prop, dev.device().index), "cudaGetDeviceProperties");
  return prop.name;
}

StreamTimer::StreamTimer(CudaDevice& dev) : dev_(dev) {}

StreamTimer::~StreamTimer() {
  for (void* e : events_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

void StreamTimer::start() {
  used_ = 0;
  mark();
}

int StreamTimer::mark() {
  if (used_ == static_cast<int>(events_.size())) {
    cudaEvent_t e;
    check_sync(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
  }
  check_sync(cudaEventRecord(static_cast<cudaEvent_t>(events_[used_]), queue_of(dev_)), "cudaEventRecord");
  return used_++;
}

std::vector<double> StreamTimer::elapsed_ms() {
  PW_CHECK(used_ > 0, "StreamTimer::elapsed_ms before start()");
  dev_.synchronize();
  std::vector<double> ms(static_cast<size_t>(used_), 0.0);
  const auto first = static_cast<cudaEvent_t>(events_[0]);
  for (int i = 1; i < used_; ++i) {
    float v = 0;
    check_sync(cudaEventElapsedTime(&v, first, static_cast<cudaEvent_t>(events_[i])), "cudaEventElapsedTime");
    ms[i] = v;
  }
  return ms;
}

}  // namespace pw::exec::cuda
