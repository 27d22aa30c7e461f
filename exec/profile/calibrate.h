// `pipewright calibrate`: measures the device it runs on into a device file
// (models/device_file.h): matrix products over a grid of shapes at each precision the device
// runs, the bandwidth of a large copy, the launch time of the smallest unit of work, and the
// forward, input-gradient and weight-gradient times of the first layer of each kind of a
// model (the zoo's kinds at representative sizes), each on real inputs (the outputs of the
// layers before it) through the backend's own layers. The device-specific half is a
// DeviceTimer (exec/device_timer.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/device_timer.h"
#include "models/device_file.h"
#include "models/layer_graph.h"

namespace pw::exec {

struct CalibrateOptions {
  std::string name;                           // the device file's name
  std::string base;                           // a catalog entry, or ""
  std::vector<int64_t> sizes;                 // the grid, ascending
  std::vector<models::Precision> precisions;  // those the device does not run are skipped
  int repeats = 5;
  int64_t copy_bytes = int64_t{256} << 20;
  int64_t memory_bytes = 0;  // the device file's memory size when there is no base
  // Layers: the first of each kind in layer_model (null: no layers), at micro-batch layer_batch.
  const models::Model* layer_model = nullptr;
  int64_t layer_batch = 1;
  std::function<void(const std::string&)> progress;  // one line per step (may be empty)
};

// The measured device, its provenance from the timer plus `date` and `command`.
models::DeviceSpec calibrate(DeviceTimer& timer, const CalibrateOptions& options, const std::string& date,
                             const std::string& command);

// Forward, input-gradient and weight-gradient seconds (medians of `repeats`) of the first layer
// of each kind in `model` (input layers excluded) at micro-batch `batch`, on the timer's device.
std::vector<models::MeasuredLayer> time_layer_kinds(DeviceTimer& timer, const models::Model& model, int64_t batch,
                                                    int repeats);

}  // namespace pw::exec
