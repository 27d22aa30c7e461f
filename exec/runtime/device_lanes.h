// Where a pipeline's workers queue their ops (exec/device_streams.h), from the `--device` flag of
// `run`: the host, or CUDA stream slots (exec/tensor.h: Device::stream).
//
// On GPUs: the workers (pipeline devices, Schedule::num_devices) are split over `gpus` GPUs
// numbered from the flag's index, in contiguous blocks (the first blocks one larger when gpus
// does not divide them), and worker k of a block runs on stream slot k of its GPU. One GPU (the
// default): worker d on slot d, so S stages are S streams whose hand-offs are events and
// ownership changes, no copies; several GPUs: hand-offs between blocks are peer copies.
// Pure functions (no device is touched), except check_device_usable.
#pragma once

#include <string>
#include <vector>

#include "exec/tensor.h"
#include "planner/schedule.h"

namespace pw::exec {

// "cpu", "cuda" (index 0) or "cuda:N" as given to `flag`; throws InputError naming the flag.
Device parse_device_flag(const std::string& s, const std::string& flag);
// Throws InputError "<flag> <device>: <why>" when this build or machine cannot use it (one
// line: no CUDA backend in this build, no GPU, no GPU of that index).
void check_device_usable(Device device, const std::string& flag);

// One lane per worker (see above). Host: every lane the host. Throws InputError when gpus < 1,
// when there are more GPUs than workers, or when a GPU would get more workers than
// CudaDevice::kMaxStreams slots.
std::vector<Device> pipeline_lanes(int workers, Device device, int gpus = 1);

// The device of every layer: the lane of the worker that runs the layer's stage
// (schedule.stage_device). `stage_end_layers[s]`: one past stage s's last layer, increasing.
std::vector<Device> layer_devices(const planner::Schedule& schedule, const std::vector<int>& stage_end_layers,
                                  const std::vector<Device>& lanes);

}  // namespace pw::exec
