// The summary `pipewright run` prints on stdout after a run: text, or JSON with --json
// (format pipewright.run-result/1: losses, timings, per-worker memory, and with --compare the
// prediction beside them).
#pragma once

#include <cstdint>
#include <string>

#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_pipeline.h"
#include "planner/plan.h"

namespace pw::tools {

struct RunSummary {
  const planner::Plan& plan;
  std::string model;           // its name
  int devices = 0;             // the schedule's devices (workers or MPI ranks)
  int64_t steps = 0;           // timed steps asked for
  int warmup_steps = 0;
  int prefetch = 0;
  std::string checkpoint_dir;  // "" = none
};

// `cmp`: the --compare prediction, or nullptr.
void print_run_json(const RunSummary& s, const exec::PipelineRunResult& r, const exec::Prediction* cmp);
void print_run_text(const RunSummary& s, const exec::PipelineRunResult& r, const exec::Prediction* cmp);

}  // namespace pw::tools
