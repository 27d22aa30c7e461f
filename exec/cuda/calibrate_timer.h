// A CUDA device's DeviceTimer (exec/device_timer.h): row-major products through cuBLASLt in
// fp32 (CUBLAS_COMPUTE_32F), TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) and bf16 (bf16 inputs and
// output, fp32 accumulation), the heuristic's first algorithm with the device's workspace, as
// the backend runs its own products; a device-to-device cudaMemcpyAsync; an empty kernel. All
// on the device's compute stream, timed with CUDA events (launches: the mean of 1,000 back to
// back).
#pragma once

#include <memory>

#include "exec/cuda/cuda_device.h"
#include "exec/device_timer.h"

namespace pw::exec::cuda {

std::unique_ptr<DeviceTimer> make_cuda_timer(CudaDevice& dev);

}  // namespace pw::exec::cuda
