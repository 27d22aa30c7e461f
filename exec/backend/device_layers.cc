// The backend seam's dispatch (declared in exec/layer.h): a layer for a spec on a device, from
// the CPU layers (exec/layers/) or the CUDA backend (exec/cuda/, only where the build has it).
// It sits above both backends in exec/'s include order (scripts/check_includes.sh), so neither
// backend includes the other.
#include <string>

#include "exec/layer.h"
#include "models/error.h"

#ifdef PW_HAVE_CUDA
#include "exec/cuda/cuda_device.h"
#include "exec/cuda/layers/cuda_layer.h"
#endif

namespace pw::exec {

using Shape = std::vector<int64_t>;

bool built_with_cuda() {
#ifdef PW_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string unusable_reason(Device device) {
  if (device.is_cpu()) return "";
#ifdef PW_HAVE_CUDA
  std::string why = cuda::unusable_reason();
  if (why.empty() && device.index >= cuda::device_count())
    why = "no CUDA device " + std::to_string(device.index) + " (this machine has " +
          std::to_string(cuda::device_count()) + ")";
  return why;
#else
  return "this build has no CUDA backend (configured without it: PW_WITH_CUDA, cmake/cuda.cmake)";
#endif
}

std::unique_ptr<Layer> make_layer(const models::LayerSpec& spec, const std::vector<Shape>& in, Device device) {
  if (device.is_cpu()) return make_layer(spec, in);
  if (const std::string why = unusable_reason(device); !why.empty())
    throw InputError("device " + device.to_string() + ": " + why);
#ifdef PW_HAVE_CUDA
  return cuda::make_cuda_layer(spec, in, cuda::CudaDevice::get(device.index, device.stream));
#else
  return nullptr;  // unreachable: unusable_reason is never empty without the backend
#endif
}

}  // namespace pw::exec
