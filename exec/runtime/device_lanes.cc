#include "exec/runtime/device_lanes.h"

#include <cctype>

#include "exec/layer.h"
#include "models/error.h"

namespace pw::exec {

namespace {
constexpr int kMaxStreamSlots = 64;  // exec/cuda/cuda_device.h: CudaDevice::kMaxStreams
constexpr int kMaxGpus = 16;         // exec/cuda/cuda_device.cc: kMaxDevices
}  // namespace

Device parse_device_flag(const std::string& s, const std::string& flag) {
  if (s == "cpu") return Device::cpu();
  if (s == "cuda") return Device::cuda(0);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() <= 8) {
    bool digits = true;
    for (size_t i = 5; i < s.size(); ++i) digits = digits && std::isdigit(static_cast<unsigned char>(s[i]));
    if (digits) return Device::cuda(std::stoi(s.substr(5)));
  }
  throw InputError(flag + ": expected cpu, cuda or cuda:N, got \"" + s + "\"");
}

void check_device_usable(Device device, const std::string& flag) {
  if (const std::string why = unusable_reason(device); !why.empty())
    throw InputError(flag + " " + device.to_string() + ": " + why);
}

int usable_gpu_count() {
  int n = 0;
  while (n < kMaxGpus && unusable_reason(Device::cuda(n)).empty()) ++n;
  return n;
}

std::vector<Device> pipeline_lanes(int workers, Device device, int gpus) {
  if (workers < 1) throw InputError("pipeline: expected at least one worker");
  if (device.is_cpu()) return std::vector<Device>(static_cast<size_t>(workers), Device::cpu());
  if (gpus < 1) throw InputError("--gpus: expected >= 1, got " + std::to_string(gpus));
  if (gpus > workers)
    throw InputError("--gpus: " + std::to_string(gpus) + " GPUs for " + std::to_string(workers) +
                     " pipeline devices (at most one GPU per device)");
  const int largest = (workers + gpus - 1) / gpus;
  if (largest > kMaxStreamSlots)
    throw InputError("pipeline: " + std::to_string(largest) + " devices on one GPU, at most " +
                     std::to_string(kMaxStreamSlots) + " stream slots");
  std::vector<Device> lanes;
  for (int g = 0; g < gpus; ++g) {
    const int n = workers / gpus + (g < workers % gpus ? 1 : 0);
    for (int k = 0; k < n; ++k) lanes.push_back(Device::cuda(device.index + g, k));
  }
  return lanes;
}

std::vector<Device> layer_devices(const planner::Schedule& schedule, const std::vector<int>& stage_end_layers,
                                  const std::vector<Device>& lanes, int replica) {
  PW_CHECK(static_cast<int>(stage_end_layers.size()) == schedule.num_stages, "layer_devices: one end per stage");
  PW_CHECK(replica >= 0, "layer_devices: negative replica");
  std::vector<Device> out;
  for (int s = 0; s < schedule.num_stages; ++s) {
    const int d = replica < schedule.replicas(s) && !schedule.stage_replicas.empty()
                      ? schedule.stage_replicas.at(static_cast<size_t>(s)).at(static_cast<size_t>(replica))
                      : schedule.stage_device.at(static_cast<size_t>(s));
    PW_CHECK(d >= 0 && d < static_cast<int>(lanes.size()), "layer_devices: stage on a device without a lane");
    while (static_cast<int>(out.size()) < stage_end_layers[static_cast<size_t>(s)]) out.push_back(lanes[d]);
  }
  return out;
}

Device rank_gpu(Device device, bool index_given, int local_rank, int gpu_count) {
  if (device.is_cpu()) return device;
  if (gpu_count < 1) throw InputError("--device " + device.to_string() + ": this machine has no GPU");
  if (!index_given) return Device::cuda(local_rank % gpu_count);
  if (device.index >= gpu_count)
    throw InputError("--device " + device.to_string() + ": this machine has " + std::to_string(gpu_count) + " GPU(s)");
  return Device::cuda(device.index);
}

std::vector<Device> rank_lanes(int devices, int rank, Device gpu) {
  PW_CHECK(rank >= 0 && rank < devices, "rank_lanes: rank outside the pipeline's devices");
  std::vector<Device> lanes(static_cast<size_t>(devices), Device::cpu());
  if (!gpu.is_cpu()) lanes[static_cast<size_t>(rank)] = Device::cuda(gpu.index, 0);
  return lanes;
}

}  // namespace pw::exec
