// Single-device training: a Network over the whole model run as one LayerRange, gradient
// accumulation over micro-batches (each micro-batch's loss scaled by 1/num_micro_batches, so
// the update equals that of the whole mini-batch), one optimizer step per mini-batch. The
// micro-batches are drawn `prefetch` mini-batches ahead on a producer thread
// (exec/data/loader.h); the data equal those of drawing them in the loop.
//
// Device (TrainOptions::device): the host, or one CUDA device that then holds the layers,
// parameters, gradients and optimizer state; each micro-batch's data and targets are drawn on
// the host and uploaded, its loss read back (one synchronizing copy per micro-batch); the NaN /
// Inf checks run on the device. Same initial weights, data, update formulas and checkpoint
// files as on the host, so a checkpoint of either resumes on the other.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/data/loader.h"
#include "exec/optimizer.h"
#include "models/json_util.h"
#include "models/layer_graph.h"

namespace pw::exec {

struct TrainOptions {
  int64_t steps = 100;
  int64_t batch = 16;       // samples per mini-batch (optimizer step)
  int64_t micro_batch = 0;  // samples per forward/backward; 0 = batch. Must divide batch.
  OptimizerOptions optimizer;
  Device device = Device::cpu();  // where the model trains (a CUDA device: exec/cuda/)
  std::string data_file;          // empty: the default (text models) / synthetic data
  uint64_t seed = 1;
  int prefetch = kDefaultPrefetch;       // mini-batches drawn ahead in the background (exec/data/loader.h); 0: none
  std::string checkpoint_dir;            // "" = no checkpoints
  int64_t checkpoint_every = 0;          // steps between checkpoints; 0 = only at the end and on a stop
  std::string resume_dir;                // "" = start fresh
  std::function<bool()> stop_requested;  // may be empty; polled after every step
};

struct StepProgress {
  int64_t step = 0;  // 1-based, steps done
  int64_t steps = 0;
  double loss = 0;           // this step's mean loss
  double samples_per_s = 0;  // over the steps so far
  double elapsed_s = 0;
  double eta_s = 0;
};

struct TrainResult {
  std::vector<double> losses;  // one per step (mean over its micro-batches)
  double samples_per_s = 0;    // over all steps (first step included), data included
  double seconds = 0;          // wall clock from the start of the first step to the end of the last
  // Step time: per step, its wall time minus the time it waited for data; the median, and the
  // samples per second it implies. end_to_end_samples_per_s = samples_per_s (named alike in
  // `run`). data_wait_s: the time the steps waited for data; data_bound: data_loading_bound.
  double step_ms = 0;
  double step_samples_per_s = 0;
  double end_to_end_samples_per_s = 0;
  double data_wait_s = 0;
  bool data_bound = false;
  // Allocator peak during training (params, grads, state, stash, data drawn ahead); on a device,
  // the device's caching allocator (params, grads, state, stash, the micro-batch uploaded).
  int64_t peak_memory_bytes = 0;
  int64_t parameter_bytes = 0;
  int64_t optimizer_bytes = 0;
  std::string data;              // description of the data source
  int64_t first_step = 0;        // steps done before this call (the resume point); losses start after it
  bool stopped = false;          // stop_requested() ended the run early
  int64_t checkpoint_step = -1;  // step of the last checkpoint this call wrote, -1 if none
};

// The optimizer's settings as a checkpoint identity records them (kind and hyper-parameters).
Json optimizer_identity(const OptimizerOptions& o);

// One `train` call as its result document (format pipewright.train-result/1, `train --json`):
// what ran (the model's name, the options, the optimizer as the user named it, the worker
// threads) and what came of it. The checkpoint entry is there when the call wrote one.
struct TrainRecord {
  std::string model;
  std::string optimizer;
  int threads = 0;
  const TrainOptions& options;
  const TrainResult& result;
};
void to_json(Json& j, const TrainRecord& r);

// Validates everything before computing (bad sizes, missing data file, a checkpoint of another
// run or a corrupt one, a device that cannot be used or a layer kind its backend does not run:
// InputError).
// `on_step` (may be empty) is called after every step on the calling thread.
TrainResult train(const models::Model& model, const TrainOptions& options,
                  const std::function<void(const StepProgress&)>& on_step = {});

}  // namespace pw::exec
