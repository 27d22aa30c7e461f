// The dispatch of exec/device_timer.h: the host's timer (exec/cpu_timer.h) or the CUDA
// backend's (exec/cuda/, only where the build has it).
#include "exec/device_timer.h"

#include "exec/cpu_timer.h"
#include "exec/layer.h"
#include "models/error.h"

#ifdef PW_HAVE_CUDA
#include "exec/cuda/calibrate_timer.h"
#endif

namespace pw::exec {

std::unique_ptr<DeviceTimer> make_device_timer(Device device, int threads) {
  if (device.is_cpu()) return make_cpu_timer(threads);
  if (const std::string why = unusable_reason(device); !why.empty())
    throw InputError("device " + device.to_string() + ": " + why);
#ifdef PW_HAVE_CUDA
  return cuda::make_cuda_timer(cuda::CudaDevice::get(device.index));
#else
  return nullptr;  // unreachable: unusable_reason is never empty without the backend
#endif
}

}  // namespace pw::exec
