// One stream slot of a CUDA device as the backend uses it (exec/tensor.h: Device::stream): a
// compute stream, a cuBLASLt handle with its own workspace, a view of the device's caching
// allocator bound to that stream (tensors made with memory() live on the device and are ordered
// on the compute stream), and the TF32 switch. Every slot of a GPU shares that GPU's one caching
// allocator (exec/cuda/caching_allocator.h: a buffer freed on one stream reaches another only
// after an event says the first is done with it). Each slot has its own cuBLASLt workspace, so
// stages running at once on one GPU never share split-K scratch, and the same GEMM picks the
// same algorithm on every slot (same workspace size): results are bitwise those of slot 0.
// No CUDA type appears here: streams and handles are opaque pointers for the backend's .cc and
// .cu files.
//
// Every kernel and GEMM of the backend is queued on the compute stream, so the layers' results
// are ordered without host waits; to_host() waits for the stream before it copies.
//
// Thread-safety: get() is thread-safe; a slot's stream is used by one thread at a time (the
// stage worker that owns the slot), as a Layer is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "exec/cuda/caching_allocator.h"
#include "exec/tensor.h"

namespace pw::exec::cuda {

// Why no CUDA device can be used here ("" when one can): no driver, an insufficient driver,
// no device, no cuBLASLt to open (asked for only once a device is found). Never throws.
std::string unusable_reason();
// Devices the runtime sees; 0 when unusable_reason() is not empty.
int device_count();

class CudaDevice {
 public:
  // Stream slot `stream` (0 <= stream < kMaxStreams) of the device of that index, created on
  // first use, made the calling thread's current device. Throws InputError naming the reason
  // when it cannot be used.
  static CudaDevice& get(int index = 0, int stream = 0);
  static constexpr int kMaxStreams = 64;
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  Device device() const { return Device::cuda(index_, slot_); }
  // Makes this device the calling thread's current CUDA device.
  void make_current() const;
  void* stream() const { return stream_; }
  void* blas_handle() const { return blas_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  CachingAllocator& allocator() { return alloc_; }
  StreamMemory& memory() { return *memory_; }
  // Blocks until the compute stream's queued work is done; throws on an asynchronous error.
  void synchronize();
  // The card's memory in bytes (cudaMemGetInfo's total: what the driver lets programs use).
  int64_t total_memory_bytes() const;
  // TF32 tensor-core matrix products (off: full fp32, the default).
  bool tf32() const { return tf32_; }
  void set_tf32(bool on) { tf32_ = on; }

 private:
  CudaDevice(int index, int slot, CachingAllocator& alloc);
  void release() noexcept;  // frees what was created (the destructor, or a constructor that throws)
  int index_;
  int slot_;
  void* stream_ = nullptr;
  void* blas_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool tf32_ = false;
  CachingAllocator& alloc_;  // the GPU's, shared by its slots
  std::unique_ptr<StreamMemory> memory_;
};

// Copies between the host and a device, ordered on the device tensor's stream; both return
// when the copy is complete (the host buffer may be reused or read). to_device of a tensor
// already on a device, or to_host of a host tensor, is an error (PW_CHECK).
Tensor to_device(const Tensor& host, CudaDevice& dev);
Tensor to_host(const Tensor& t);
// host[0, numel) -> an existing device tensor; a device tensor -> host[0, numel).
void upload(const float* host, Tensor& device_tensor);
void download(const Tensor& device_tensor, float* host);

}  // namespace pw::exec::cuda
