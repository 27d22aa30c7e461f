// compare_session: the orchestration of `run --compare` around a pipeline run on this machine:
// whether the prediction's profile rounds run between the run's steps or after it (a memory
// budget), and the measurement itself (exec/runtime/run_compare.h), started on first use.
//
// Between the steps the run's tensors and the profile's copies are live at once, so the rounds
// run there only when both fit in half of this machine's memory; MPI ranks never measure between
// the steps (rank 0 measures after the run while the other ranks wait, so they do not compete
// with the measurement).
//
// On GPUs (PipelineRunOptions::device cuda) the profile is measured on the GPU after the run
// (its rounds would share the card with the run's streams), and the device allocator's peak of
// each of the run's GPUs is taken over the run: measure_between_steps starts its window, predict()
// reads it before measuring (exec/runtime/device_compare.h).
//
// Not thread-safe; the model, plan and options given to a CompareSession must outlive it (the
// options are read when the measurement starts, so between_steps set afterwards is seen).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/optimizer.h"
#include "exec/runtime/device_compare.h"
#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_pipeline.h"
#include "models/layer_graph.h"
#include "planner/plan.h"

namespace pw::exec {

// The bytes live at once when the profile is measured between the run's steps.
struct CompareMemory {
  // The run: models::estimated_training_bytes at the plan's micro-batch size with all its
  // micro-batches in flight, by the run's optimizer.
  double run_bytes = 0;
  // The profile's copies: one micro-batch of the whole model per device, or (worker_passes)
  // what the run's workers hold, i.e. run_bytes: the larger of the two.
  double copies_bytes = 0;
};
CompareMemory compare_memory(const models::Model& model, const planner::Plan& plan, const OptimizerOptions& optimizer,
                             int devices);
// run_bytes + copies_bytes <= half of `memory_bytes`; false when memory_bytes <= 0 (unknown).
bool fits_between_steps(const CompareMemory& memory, int64_t memory_bytes);

class CompareSession {
 public:
  // `devices`: the schedule's devices (workers or MPI ranks); `ranks`: the run is one rank of an
  // MPI job; `note` (may be empty) gets the one line said when the measurement starts.
  CompareSession(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options, int devices,
                 bool ranks, std::function<void(const std::string&)> note = {});
  ~CompareSession();
  CompareSession(const CompareSession&) = delete;
  CompareSession& operator=(const CompareSession&) = delete;

  // Sets `options`.between_steps (compare_rounds_between_steps: rounds of this session's
  // measurement between the steps) for a threaded run whose tensors and profile copies fit in
  // half of `memory_bytes` (fits_between_steps), and returns whether it did. `options` is
  // normally the one given to the constructor. On GPUs: never (false), and the device
  // allocators' peak windows start here (call it right before the run).
  bool measure_between_steps(PipelineRunOptions& options, int64_t memory_bytes);

  // The measurement, started on first use: OpenMP threads per copy = the run's threads per
  // worker, or this machine's cores / devices; the background loader's draw time when a
  // threaded run prefetches (MPI ranks each draw on their own, not modelled).
  PredictionMeasurement& measurement();
  // measurement().predict(): the rounds still missing, then the simulation. On GPUs with the
  // measured device peaks (GpuComparison::measured_peak_bytes) filled in when
  // measure_between_steps started their window (else left empty). Call it after the run: the
  // host buffers the run's workers freed into Allocator::global()'s cache are returned to the
  // system first, so that the measurement's memory check (exec/profile/measure_memory.h) sees
  // them as available and the measurement can use them.
  Prediction predict();

  int threads() const { return threads_; }

 private:
  const models::Model& model_;
  const planner::Plan& plan_;
  const PipelineRunOptions& options_;
  int devices_;
  bool ranks_;
  int threads_ = 1;
  std::function<void(const std::string&)> note_;
  std::unique_ptr<PredictionMeasurement> measurement_;
  std::vector<Card> cards_;  // on GPUs, from measure_between_steps: the run's GPUs and their workers
};

}  // namespace pw::exec
