// run_report: what `pipewright run` reports after a pipeline run — the plan and options it ran
// with, the measured result (exec/runtime/run_pipeline.h) and, with --compare, the prediction
// beside it (exec/runtime/run_compare.h) — and its JSON document, format
// pipewright.run-result/1: losses, timings, per-worker memory and placement, the steps done,
// the checkpoint when one was written, the predicted iteration time and per-worker peak
// memory when compared, and on GPUs each worker's device and stream (device_lanes) and, when
// compared, the GPU the profile was measured on (profile_device), each GPU's measured and
// predicted peak (device_memory) and, when some GPU holds several workers, the prediction that
// accounts for the sharing and the note that says so (predicted_shared_iteration_ms,
// compare_note; exec/runtime/device_compare.h).
//
// A RunReport only refers to what it reports; they must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_pipeline.h"
#include "models/json_util.h"
#include "planner/plan.h"

namespace pw::exec {

struct RunReport {
  const planner::Plan& plan;
  std::string model;  // its name
  int devices = 0;    // the schedule's devices (workers or MPI ranks)
  int64_t steps = 0;  // timed steps asked for
  int warmup_steps = 0;
  int prefetch = 0;
  std::string checkpoint_dir;  // "" = none
  const PipelineRunResult& result;
  const Prediction* prediction = nullptr;  // the --compare prediction, or nullptr
};

// pipewright.run-result/1. result.placement and result.peak_memory_bytes (and the prediction's
// peak_memory_bytes) must have an entry per device.
void to_json(Json& j, const RunReport& report);

}  // namespace pw::exec
