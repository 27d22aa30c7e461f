// `whatif max-model`: the largest model of a family that the planner can fit on N devices
// (GPipe's Table 1 question).
//
// The size searched is the number of repeated layers: `layers` (transformer blocks) for gpt,
// `depth` (linear layers) for mlp; every other setting stays as configured. Conv nets have a
// fixed depth and are rejected (InputError).
//
// Modes:
// - naive: one device, one micro-batch, no re-materialization, gpipe (plain training);
//   reported with devices = 1 whatever N is asked.
// - pipelined: N devices, the config's micro_batches (default "auto"), recompute (the CLI
//   default is "on", models::kMaxModelRecompute; "auto" finds the same size, slower) and
//   schedule; the planner chooses the partition (it may use fewer than N devices when that
//   is faster).
// Each probe is a real planner call (evaluate_whatif without simulation). The search assumes
// feasibility is monotone in the size: it probes 1, an estimate from the persistent memory per
// layer, gallops by doubling/halving to bracket the boundary, then bisects.
//
// Thread-safety: pure; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/json_util.h"
#include "whatif/config.h"
#include "whatif/runner.h"
#include "whatif/table.h"

namespace pw::whatif {

enum class MaxModelMode { naive, pipelined };
std::string_view to_string(MaxModelMode m);  // "naive", "pipelined"

struct StageMemory {
  int64_t weights_optimizer_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t memory_bytes = 0;
};

struct MaxModelResult {
  int devices = 0;  // devices of the configuration (1 for naive)
  MaxModelMode mode = MaxModelMode::pipelined;
  int64_t layers = 0;  // the searched size (layers or depth)
  int64_t parameters = 0;
  int64_t weights_optimizer_bytes = 0;  // of the fullest device
  int64_t activation_bytes = 0;         // of the fullest device
  int64_t memory_bytes = 0;             // fullest device's total (planner's model)
  int64_t device_memory_bytes = 0;      // capacity
  int stages = 0;
  int micro_batches = 0;
  int64_t micro_batch_size = 0;
  int recompute_stages = 0;
  double iteration_s = 0;  // planner's prediction at that size
  double throughput_samples_per_s = 0;
  int probes = 0;                         // planner calls made
  bool capped = false;                    // still fitting at max_size
  std::string reason;                     // non-empty: not even size 1 fits (layers = 0)
  std::vector<StageMemory> stage_memory;  // per stage of the plan
};

// The name of the searched setting for a family ("layers" or "depth"); InputError otherwise.
std::string max_model_size_setting(const std::string& family);

// Throws Infeasible when even size 1 does not fit (the message names the memory needed and
// available), InputError for bad settings.
// exact_partitioning: every probe runs the planner's DP (EvalOptions), for comparisons.
MaxModelResult find_max_model(const WhatifConfig& config, MaxModelMode mode, int64_t max_size = 1 << 20,
                              bool exact_partitioning = false);

// Runs find_max_model for the naive mode and for the pipelined mode at each device count, in
// parallel (threads: 0 = all). A configuration where even size 1 does not fit becomes a row
// with layers = 0 and its reason; when no configuration fits at all, the first one's
// Infeasible is thrown.
std::vector<MaxModelResult> max_model_study(const WhatifConfig& config, const std::vector<int>& devices,
                                            int64_t max_size = 1 << 20, int threads = 0,
                                            ProgressMode progress = ProgressMode::off);

// Table columns: devices, mode, layers, parameters, weights_optimizer_bytes, activation_bytes,
// memory_bytes, device_memory_bytes, stages, micro_batches, micro_batch_size,
// recompute_stages, iteration_s, throughput_samples_per_s, probes, reason.
Table max_model_table(const std::vector<MaxModelResult>& rows);

}  // namespace pw::whatif
