// The device dispatch of exec/device_streams.h: nothing (or the host clock) for the host, the
// CUDA backend's events (exec/cuda/stream_sync.h, only where the build has it) for a CUDA device.
#include "exec/device_streams.h"

#include <cmath>
#include <string>

#include "exec/layer.h"
#include "models/error.h"

#ifdef PW_HAVE_CUDA
#include "exec/cuda/cuda_device.h"
#include "exec/cuda/stream_sync.h"
#endif

namespace pw::exec {

namespace {

using StreamSteadyClock = std::chrono::steady_clock;

int64_t ns_since_origin(StreamSteadyClock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(StreamSteadyClock::now() - t0).count();
}

class HostStreamClock final : public StreamClock {
 public:
  explicit HostStreamClock(StreamSteadyClock::time_point t0) : t0_(t0) {}
  void start() override {
    marks_.clear();
    mark();
  }
  int mark() override {
    marks_.push_back(ns_since_origin(t0_));
    return static_cast<int>(marks_.size()) - 1;
  }
  std::vector<int64_t> finish() override { return marks_; }

 private:
  StreamSteadyClock::time_point t0_;
  std::vector<int64_t> marks_;
};

#ifdef PW_HAVE_CUDA
cuda::CudaDevice& stream_slot(Device d) {
  if (const std::string why = unusable_reason(d); !why.empty())
    throw InputError("device " + d.to_string() + ": " + why);
  return cuda::CudaDevice::get(d.index, d.stream);
}

class CudaStreamClock final : public StreamClock {
 public:
  CudaStreamClock(cuda::CudaDevice& dev, StreamSteadyClock::time_point t0) : timer_(dev), t0_(t0) {}
  void start() override {
    start_ns_ = ns_since_origin(t0_);
    timer_.start();
  }
  int mark() override { return timer_.mark(); }
  std::vector<int64_t> finish() override {
    const std::vector<double> ms = timer_.elapsed_ms();
    std::vector<int64_t> ns;
    ns.reserve(ms.size());
    for (double v : ms) ns.push_back(device_mark_ns(start_ns_, v));
    return ns;
  }

 private:
  cuda::StreamTimer timer_;
  StreamSteadyClock::time_point t0_;
  int64_t start_ns_ = 0;
};
#else
[[noreturn]] void no_stream_backend(Device d) {
  throw InputError("device " + d.to_string() + ": " + unusable_reason(d));
}
#endif

}  // namespace

int64_t device_mark_ns(int64_t window_start_ns, double elapsed_ms) {
  return window_start_ns + std::llround(elapsed_ms * 1e6);
}

void bind_thread(Device device) {
  if (device.is_cpu()) return;
#ifdef PW_HAVE_CUDA
  stream_slot(device).make_current();
#else
  no_stream_backend(device);
#endif
}

Fence record_fence(Device device) {
  if (device.is_cpu()) return nullptr;
#ifdef PW_HAVE_CUDA
  return cuda::record_fence(stream_slot(device));
#else
  no_stream_backend(device);
#endif
}

void receive_tensors(std::vector<Tensor>& tensors, const Fence& fence, Device device) {
  if (device.is_cpu()) {
    for (const Tensor& t : tensors)
      PW_CHECK(t.empty() || t.device().is_cpu(), "a host worker received a tensor on " + t.device().to_string());
    return;
  }
#ifdef PW_HAVE_CUDA
  cuda::hand_over(tensors, fence, stream_slot(device));
#else
  no_stream_backend(device);
#endif
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
#ifdef PW_HAVE_CUDA
  stream_slot(device).synchronize();
#else
  no_stream_backend(device);
#endif
}

std::string device_name(Device device) {
  if (device.is_cpu()) return "cpu";
#ifdef PW_HAVE_CUDA
  return cuda::device_name(stream_slot(device)) + " (cuda:" + std::to_string(device.index) + ")";
#else
  no_stream_backend(device);
#endif
}

std::unique_ptr<StreamClock> make_stream_clock(Device device, StreamSteadyClock::time_point t0) {
  if (device.is_cpu()) return std::make_unique<HostStreamClock>(t0);
#ifdef PW_HAVE_CUDA
  return std::make_unique<CudaStreamClock>(stream_slot(device), t0);
#else
  no_stream_backend(device);
#endif
}

}  // namespace pw::exec
