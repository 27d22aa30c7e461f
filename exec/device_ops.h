// Tensor operations for the runtimes on whichever device a tensor lives (exec/tensor.h:
// Device): a device's memory, copies between the host and a device, gradient accumulation, the
// finite check and the optimizer steps. Host tensors take the host code; tensors on a CUDA
// device take the CUDA backend's kernels, queued on that device's compute stream
// (exec/backend/device_ops.cc dispatches, as exec/backend/device_layers.cc does for layers).
//
// Functions that hand values to the host (copy_to_host, finite_flags, nonfinite_kind) wait for
// the device's queued work; the others queue theirs and return. A device this build or
// machine cannot use throws InputError naming why (exec/layer.h: unusable_reason); tensors of
// different devices or sizes where the same are expected are PW_CHECK failures.
// Thread-safety: as the device's stream (exec/cuda/cuda_device.h): one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/tensor.h"

namespace pw::exec {

// Where tensors of `device` are allocated: Allocator::global() for the host; the device's
// caching allocator on its compute stream for a CUDA device (peak_bytes(): the device's peak).
MemoryResource& device_memory(Device device);

// The memory of `device`, a CUDA device: the card's total in bytes. The host's is not asked
// here (exec/machine/memory.h: memory_bound); a host device is a PW_CHECK failure.
int64_t device_total_memory_bytes(Device device);

// A copy of `t` (on any device) on `device`: a clone when both are the host; a tensor on a
// device is staged through the host (waiting for its device's queued work).
Tensor copy_to_device(const Tensor& t, Device device);
// A host tensor holding t's values (a clone of a host tensor).
inline Tensor host_copy(const Tensor& t) { return copy_to_device(t, Device::cpu()); }
// The host tensor `host` on `device`: itself (moved, no copy) on the host or when empty, else
// a copy there.
inline Tensor placed_on(Tensor host, Device device) {
  return device.is_cpu() || host.empty() ? std::move(host) : copy_to_device(host, device);
}
// t's values -> host[0, t.numel()); host[0, t.numel()) -> t. Any device.
void copy_to_host(const Tensor& t, float* host);
void copy_from_host(const float* host, Tensor& t);

// y += x (same device, same element count).
void accumulate(Tensor& y, const Tensor& x);

// Per tensor (all on one device): whether every value is finite. On a CUDA device one kernel
// per tensor and a single read-back for the whole list.
std::vector<bool> finite_flags(const std::vector<Tensor*>& tensors);
// "NaN" or "Inf": the kind of t's first non-finite value ("" when all are finite).
std::string nonfinite_kind(const Tensor& t);

// exec/optimizer_update.h's steps over whole tensors on a CUDA device (the host Optimizer runs
// its own loop): momentum may be null (plain SGD); c1, c2: Adam's bias corrections.
void device_sgd_step(Tensor& p, const Tensor& g, Tensor* momentum, float lr, float mu, float wd);
void device_adam_step(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, float lr, float b1, float b2, float c1,
                      float c2, float eps, float wd);

// device_adam_step for every i (p[i], g[i], m[i], v[i], all on one CUDA device) in one kernel
// launch (a multi-tensor apply, exec/cuda/multi_tensor.h), each element updated by the same
// formula in the same order, so the results equal the per-tensor steps bit for bit. `cache` is
// the caller's, kept between calls: the launch table on the device, rebuilt (one synchronizing
// upload) only when the tensors' addresses or sizes change, e.g. after weight versions swap.
struct MultiTensorCache {
  std::vector<int64_t> words;  // the table's host copy (addresses, blocks)
  int64_t tensors = 0;
  std::vector<std::pair<int64_t, int64_t>> launches;  // first block, blocks
  Tensor table;                                       // the words on the device
};
void device_adam_step_all(const std::vector<Tensor*>& p, const std::vector<Tensor*>& g, std::vector<Tensor>& m,
                          std::vector<Tensor>& v, float lr, float b1, float b2, float c1, float c2, float eps, float wd,
                          MultiTensorCache& cache);

// TF32 tensor-core matrix products (on) or full fp32 (off, the default) for the products of
// `device`, a CUDA device (exec/cuda/gemm.h). Throws InputError for the host or a device that
// cannot be used.
void set_tf32(Device device, bool on);

}  // namespace pw::exec
