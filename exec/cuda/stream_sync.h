// Ordering between the streams of the backend (exec/cuda/cuda_device.h: one per stream slot) and
// timing on them, with CUDA events. No CUDA type appears here.
//
// Hand-off of tensors from a producer slot to a consumer slot (pipeline stages):
//   producer: fence = record_fence(producer)        marks the end of the producer's queued work
//   consumer: hand_over(tensors, fence, consumer)   the consumer's stream waits for the fence
//                                                    (no host wait), then each tensor belongs
//                                                    to the consumer:
// - same GPU: the buffer is rebound to the consumer's stream (no copy). Its later free is then
//   recorded on the consumer's stream, whose work is ordered after the producer's, so the
//   caching allocator hands it to the producer's (or any other) stream only after the consumer
//   is done with it;
// - another GPU: a copy on the consumer's GPU made by a peer copy queued on the consumer's
//   stream; the producer's stream is made to wait for that copy before the source buffer is
//   freed on it, so the source is reused only once the copy has read it.
// Thread-safety: the fence may be handed between threads; each call runs on the thread that owns
// the slot it queues on.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/cuda/cuda_device.h"
#include "exec/tensor.h"

namespace pw::exec::cuda {

using Fence = std::shared_ptr<void>;  // a recorded CUDA event, destroyed with the last owner

Fence record_fence(CudaDevice& producer);
// Empty tensors are left as they are; every other must be on a CUDA device.
void hand_over(std::vector<Tensor>& tensors, const Fence& fence, CudaDevice& consumer);

// The device's name (cudaGetDeviceProperties).
std::string device_name(const CudaDevice& dev);

// Timing events on one slot's stream, reused from one window to the next.
class StreamTimer {
 public:
  explicit StreamTimer(CudaDevice& dev);
  ~StreamTimer();
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;
  // Starts a window: records mark 0 on the stream.
  void start();
  // Records the next mark on the stream; returns its number (1, 2, ...) in the window.
  int mark();
  // Waits for the stream, then the milliseconds from mark 0 to each mark (index 0: 0).
  std::vector<double> elapsed_ms();

 private:
  CudaDevice& dev_;
  std::vector<void*> events_;  // cudaEvent_t, timing enabled
  int used_ = 0;
};

}  // namespace pw::exec::cuda
