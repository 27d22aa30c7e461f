// DeviceTimer: the device-specific measurements of `pipewright calibrate` (exec/profile/
// calibrate.h): matrix products at each precision, a large copy, a launch. The host's comes
// from exec/cpu_timer.h (oneDNN), a CUDA device's from exec/cuda/ (cuBLASLt, CUDA events);
// make_device_timer (exec/backend/device_timer.cc) picks.
//
// Times are medians over `repeats` timed runs after one untimed run; operands are allocated
// once per shape and hold non-zero values. Thread-safety: one thread at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "exec/tensor.h"
#include "models/device_file.h"
#include "models/median.h"

namespace pw::exec {

class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual Device device() const = 0;
  // Whether products at `p` run on this device (the host: fp32 only).
  virtual bool supports(models::Precision p) const = 0;
  // Seconds of one row-major product C[m, n] = A[m, k] B[k, n] at `p`.
  virtual double gemm_seconds(models::Precision p, int64_t m, int64_t n, int64_t k, int repeats) = 0;
  // Bytes read plus bytes written per second by a copy of `bytes` bytes within the device.
  virtual double copy_bytes_per_s(int64_t bytes, int repeats) = 0;
  // Seconds per launch of the smallest unit of work (an empty kernel; on the host a 1 x 1 x 1
  // product), back to back.
  virtual double launch_seconds(int repeats) = 0;
  // Waits for the device's queued work (timing layers from the host).
  virtual void synchronize() = 0;
  // card, driver, runtime and host; the caller adds date and command.
  virtual models::Provenance provenance() const = 0;
};

// The median of max(repeats, 1) timed runs after one untimed run (primitives created, pages
// touched): `run` performs one run and returns its seconds, however the backend measures them.
template <class Run>
double median_of_runs(int repeats, Run&& run) {
  (void)run();
  std::vector<double> t;
  for (int r = 0; r < std::max(repeats, 1); ++r) t.push_back(run());
  return models::median_of(std::move(t));
}

// The timer of `device`: the host (`threads` OpenMP threads; 0 = all) or a CUDA device. Throws
// InputError naming why a device cannot be used.
std::unique_ptr<DeviceTimer> make_device_timer(Device device, int threads);

}  // namespace pw::exec
