// Where a pipeline's workers queue their ops (exec/device_streams.h), from the `--device` flag of
// `run`: the host, or CUDA stream slots (exec/tensor.h: Device::stream).
//
// On GPUs: the workers (pipeline devices, Schedule::num_devices) are split over `gpus` GPUs
// numbered from the flag's index, in contiguous blocks (the first blocks one larger when gpus
// does not divide them), and worker k of a block runs on stream slot k of its GPU. One GPU (the
// default): worker d on slot d, so S stages are S streams whose hand-offs are events and
// ownership changes, no copies; several GPUs: hand-offs between blocks are peer copies.
// Replicated stages: every replica is a pipeline device like any other, with its own lane; the
// compute of replica i (exec/runtime/run_setup.h) has stage s's layers on the lane of stage s's
// replica i.
//
// MPI ranks (exec/runtime/run_ranks.h): each rank drives one pipeline device (its own rank) on
// one GPU: `cuda` (no index) = GPU local rank mod the GPU count, so the ranks of a host spread
// over its GPUs (two ranks may share one); `cuda:N` = GPU N for every rank. The rank's lane is
// stream slot 0 of that GPU; the stages the rank does not run stay on the host (every rank
// builds every stage, run_setup.h, but computes only its own).
// Pure functions (no device is touched), except check_device_usable and usable_gpu_count.
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
// The GPUs this build and machine can use (0 without a CUDA backend or without a GPU).
int usable_gpu_count();

// One lane per worker (see above). Host: every lane the host. Throws InputError when gpus < 1,
// when there are more GPUs than workers, or when a GPU would get more workers than
// CudaDevice::kMaxStreams slots.
std::vector<Device> pipeline_lanes(int workers, Device device, int gpus = 1);

// The device of every layer for the compute of replica `replica`: the lane of the worker that
// runs that replica of the layer's stage (stage_replicas[s][replica]; replica 0 is
// schedule.stage_device). A stage with fewer replicas than replica + 1 is never run by that
// compute: its layers take replica 0's lane. `stage_end_layers[s]`: one past stage s's last
// layer, increasing.
std::vector<Device> layer_devices(const planner::Schedule& schedule, const std::vector<int>& stage_end_layers,
                                  const std::vector<Device>& lanes, int replica = 0);

// The GPU an MPI rank runs on (see above): `device` is the flag's (its index is used when
// `index_given`), `local_rank` the rank's number among the ranks of its host, `gpu_count` the
// host's GPUs. Throws InputError when gpu_count < 1 or the index is not below gpu_count.
Device rank_gpu(Device device, bool index_given, int local_rank, int gpu_count);
// The lanes of an MPI job's `devices` pipeline devices as rank `rank` sees them: its own is
// `gpu`'s stream slot 0, every other the host (the host everywhere when gpu is the host).
std::vector<Device> rank_lanes(int devices, int rank, Device gpu);

}  // namespace pw::exec
