// One CUDA device as the backend uses it: a compute stream, the caching allocator over the CUDA
// runtime (tensors made with memory() live on the device and are ordered on the compute
// stream), a cuBLASLt handle with its workspace, and the TF32 switch. No CUDA type appears
// here: streams and handles are opaque pointers for the backend's .cc and .cu files.
//
// Every kernel and GEMM of the backend is queued on the compute stream, so the layers' results
// are ordered without host waits; to_host() waits for the stream before it copies.
//
// Thread-safety: get() is thread-safe; a device's stream is used by one thread at a time (the
// stage worker that owns the device), as a Layer is.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "exec/cuda/caching_allocator.h"
#include "exec/tensor.h"

namespace pw::exec::cuda {

// Why no CUDA device can be used here ("" when one can): no driver, an insufficient driver,
// no device. Never throws.
std::string unusable_reason();
// Devices the runtime sees; 0 when unusable_reason() is not empty.
int device_count();

class CudaDevice {
 public:
  // The device of that index, created on first use. Throws InputError naming the reason when
  // it cannot be used.
  static CudaDevice& get(int index = 0);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  Device device() const { return Device::cuda(index_); }
  // Makes this device the calling thread's current CUDA device.
  void make_current() const;
  void* stream() const { return stream_; }
  void* blas_handle() const { return blas_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  CachingAllocator& allocator() { return *alloc_; }
  StreamMemory& memory() { return *memory_; }
  // Blocks until the compute stream's queued work is done; throws on an asynchronous error.
  void synchronize();
  // TF32 tensor-core matrix products (off: full fp32, the default).
  bool tf32() const { return tf32_; }
  void set_tf32(bool on) { tf32_ = on; }

 private:
  explicit CudaDevice(int index);
  int index_;
  void* stream_ = nullptr;
  void* blas_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool tf32_ = false;
  std::unique_ptr<DeviceDriver> driver_;
  std::unique_ptr<CachingAllocator> alloc_;
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
