// `whatif throughput`: a grid of pipeline partitions K, micro-batch counts M and schedules,
// the simulated throughput of each normalized to a baseline cell (GPipe's Table 2), with its
// bubble rate and per-stage memory.
//
// Cell (K, M, schedule): the config with devices = K, micro_batches = M, schedule; the planner
// partitions the model (with the "gpipe-greedy" or "even" partitioner it uses exactly K stages;
// "dp" may choose fewer when that is faster: stages_used says), then the plan is simulated
// (sim/plan_prediction.h) for 2 iterations. A cell that does not fit is a row with
// feasible = false and its reason. normalized = throughput / throughput of the baseline cell
// (null when the baseline does not fit).
//
// The batch is fixed across the grid, so normalized throughput is the inverse ratio of the
// iteration times. Cells are evaluated in parallel (whatif/runner.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/profile.h"
#include "whatif/config.h"
#include "whatif/max_model.h"
#include "whatif/runner.h"
#include "whatif/table.h"

namespace pw::whatif {

struct ThroughputRequest {
  std::vector<int> stages;             // K values (>= 1)
  std::vector<int> micro_batches;      // M values (>= 1)
  std::vector<std::string> schedules;  // schedule names the planner's sync objective accepts
  // Baseline cell; 0 / "" = the first value of the corresponding list.
  int baseline_stages = 0;
  int baseline_micro_batches = 0;
  std::string baseline_schedule;
  int threads = 0;                            // 0 = available_threads()
  ProgressMode progress = ProgressMode::off;  // progress on stderr (whatif/runner.h)
  const models::Profile* profile = nullptr;   // measured profile instead of the analytic one
};

struct ThroughputCell {
  int stages = 0;
  int micro_batches = 0;
  std::string schedule;
  bool feasible = false;
  std::string reason;
  int stages_used = 0;
  int64_t micro_batch_size = 0;
  int64_t parameters = 0;          // of the model (0 with a measured profile)
  double flops_per_iteration = 0;  // matmul FLOPs (whatif/eval.h), 0 with a measured profile
  double iteration_s = 0;          // simulated steady-state iteration
  double throughput_samples_per_s = 0;
  double normalized = 0;                         // < 0 when the baseline does not fit
  double bubble_rate = 0;                        // simulated (sim/report.h: idle of the longest-span device)
  double idle_share = 0;                         // simulated: 1 - mean busy / (devices x iteration)
  int64_t peak_memory_bytes = 0;                 // simulated, largest over devices
  int64_t device_memory_bytes = 0;               // capacity (the simulated peak may exceed it: the
                                                 // planner's memory model is not the simulator's)
  std::vector<StageMemory> stage_memory;         // planner's per-stage breakdown
  std::vector<int64_t> stage_peak_memory_bytes;  // simulated peak per stage's device
};

// Throws InputError for empty lists, bad values, or a baseline that is not in the grid.
std::vector<ThroughputCell> throughput_grid(const WhatifConfig& config, const ThroughputRequest& request);

// Columns: stages, micro_batches, schedule, feasible, stages_used, micro_batch_size,
// parameters, flops_per_iteration, iteration_s, throughput_samples_per_s, normalized,
// bubble_rate, idle_share, peak_memory_bytes, device_memory_bytes, stage_peak_memory_bytes (array), reason.
Table throughput_table(const std::vector<ThroughputCell>& cells);

}  // namespace pw::whatif
