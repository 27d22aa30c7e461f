// Ordering and timing on a device's queue of work (exec/tensor.h: Device, its stream slot), for
// runtimes that drive several queues at once: pipeline workers, one per stage. Host devices run
// their work when called, so for them every function here does nothing (or is exact at once);
// CUDA devices queue it on the slot's stream (exec/backend/device_streams.cc dispatches to
// exec/cuda/stream_sync.h).
//
// Hand-off (a worker sends tensors to another worker's device):
//   sender:   Fence f = record_fence(mine);             after queuing the work that made them
//   receiver: receive_tensors(tensors, f, mine);        before queuing work that reads them
// After receive_tensors every non-empty tensor is on the receiver's device: on the same GPU the
// buffers change owner (no copy) once the receiver's queue waits for the fence; on another GPU
// they are copied (peer copy). No host thread waits.
//
// Timing: a StreamClock marks points in a device's queue; the times of the marks are read once
// the queue has run them (finish). On the host a mark is the time of the call.
// Thread-safety: each call for a device runs on the thread that drives it (bind_thread first);
// a Fence may be handed between threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/tensor.h"

namespace pw::exec {

using Fence = std::shared_ptr<void>;  // empty for the host

// Makes `device`'s accelerator the calling thread's current one (nothing for the host).
// Throws InputError naming the device when it cannot be used.
void bind_thread(Device device);
Fence record_fence(Device device);
void receive_tensors(std::vector<Tensor>& tensors, const Fence& fence, Device device);
// Blocks until `device`'s queued work is done (nothing for the host).
void synchronize(Device device);
// The accelerator's name and index, e.g. "NVIDIA H100 80GB HBM3 (cuda:0)" ("cpu" for the host).
std::string device_name(Device device);

// The trace time of a device mark: the host time of the window's start (ns since the trace's
// origin) plus the device's elapsed milliseconds from the window's first mark, rounded to ns.
int64_t device_mark_ns(int64_t window_start_ns, double elapsed_ms);

// Marks in a device's queue, read back in windows (a pipeline iteration).
class StreamClock {
 public:
  virtual ~StreamClock() = default;
  // Starts a window: its origin is now, on the host and in the device's queue (which the caller
  // has left idle: everything queued before has finished).
  virtual void start() = 0;
  // A mark at the current end of the queue; returns its number in the window (0, 1, ...).
  virtual int mark() = 0;
  // Waits for the queue; the time of each mark of the window (ns since `t0`), in order.
  virtual std::vector<int64_t> finish() = 0;
};

// A clock for `device` whose times are nanoseconds since `t0`: host times for the host, CUDA
// event times for a CUDA device (device_mark_ns).
std::unique_ptr<StreamClock> make_stream_clock(Device device, std::chrono::steady_clock::time_point t0);

}  // namespace pw::exec
