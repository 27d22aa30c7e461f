// The host's DeviceTimer (exec/device_timer.h): fp32 products through oneDNN's matmul (the
// executor's own path, exec/dnnl_util.h), copies with memcpy, and the launch of a 1 x 1 x 1
// product, on `threads` OpenMP threads (0 = all).
#pragma once

#include <memory>

#include "exec/device_timer.h"

namespace pw::exec {

std::unique_ptr<DeviceTimer> make_cpu_timer(int threads);

}  // namespace pw::exec
