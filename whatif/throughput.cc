#include "whatif/throughput.h"

#include <algorithm>
#include <cstdio>

#include "models/error.h"
#include "whatif/eval.h"
#include "whatif/runner.h"

namespace pw::whatif {

std::vector<ThroughputCell> throughput_grid(const WhatifConfig& config, const ThroughputRequest& req) {
  if (req.stages.empty()) throw InputError("--stages: expected at least one partition count");
  if (req.micro_batches.empty()) throw InputError("--micro-batches: expected at least one micro-batch count");
  if (req.schedules.empty()) throw InputError("--schedules: expected at least one schedule");
  for (int k : req.stages)
    if (k < 1) throw InputError("--stages: expected integers >= 1, got " + std::to_string(k));
  for (int m : req.micro_batches) {
    if (m < 1) throw InputError("--micro-batches: expected integers >= 1, got " + std::to_string(m));
    if (m > config.batch)
      throw InputError("--micro-batches: " + std::to_string(m) + " micro-batches need a batch of at least " +
                       std::to_string(m) + " samples (--batch is " + std::to_string(config.batch) + ")");
  }
  for (const std::string& s : req.schedules) check_catalog_name("schedule", s);
  const int bk = req.baseline_stages ? req.baseline_stages : req.stages.front();
  const int bm = req.baseline_micro_batches ? req.baseline_micro_batches : req.micro_batches.front();
  const std::string bs = req.baseline_schedule.empty() ? req.schedules.front() : req.baseline_schedule;
  if (std::find(req.stages.begin(), req.stages.end(), bk) == req.stages.end() ||
      std::find(req.micro_batches.begin(), req.micro_batches.end(), bm) == req.micro_batches.end() ||
      std::find(req.schedules.begin(), req.schedules.end(), bs) == req.schedules.end())
    throw InputError("--baseline: K=" + std::to_string(bk) + ", M=" + std::to_string(bm) + ", " + bs +
                     " is not a cell of the grid");

  std::vector<ThroughputCell> cells;
  std::vector<WhatifConfig> configs;
  for (int k : req.stages)
    for (int m : req.micro_batches)
      for (const std::string& s : req.schedules) {
        WhatifConfig c = config;
        c.devices = k;
        c.micro_batches = std::to_string(m);
        c.schedule = s;
        validate_config(c, "");
        if (!req.profile) build_whatif_cluster(c);  // device-count errors before the grid runs
        ThroughputCell cell;
        cell.stages = k;
        cell.micro_batches = m;
        cell.schedule = s;
        cells.push_back(cell);
        configs.push_back(c);
      }

  ProgressBar bar(stderr, cells.size(), "throughput", req.progress);
  EvalOptions eo;
  eo.simulate = true;
  eo.profile = req.profile;
  parallel_for(
      cells.size(), req.threads,
      [&](size_t i) {
        ThroughputCell& cell = cells[i];
        WhatifEvaluation e = evaluate_whatif(configs[i], eo);
        cell.feasible = e.feasible;
        if (!e.feasible) {
          cell.reason = e.reason;
          return;
        }
        const planner::Plan& p = e.outcome.plan;
        cell.stages_used = p.num_stages();
        cell.micro_batch_size = p.micro_batch_size;
        cell.parameters = e.parameters;
        cell.flops_per_iteration = e.flops_per_iteration;
        cell.iteration_s = static_cast<double>(e.report.iteration_ns) * 1e-9;
        cell.throughput_samples_per_s = cell.iteration_s > 0 ? static_cast<double>(p.batch) / cell.iteration_s : 0;
        cell.bubble_rate = e.report.bubble_rate;
        cell.idle_share = e.report.idle_share;
        cell.peak_memory_bytes = e.report.peak_memory_bytes;
        cell.device_memory_bytes = build_whatif_cluster(configs[i]).device().memory_bytes;
        for (int s = 0; s < p.num_stages(); ++s) {
          const planner::StagePrediction& sp = p.stages[s].predicted;
          cell.stage_memory.push_back({sp.weights_optimizer_bytes, sp.activation_bytes, sp.memory_bytes});
          // Simulated devices are numbered by stage (stage s on device s).
          cell.stage_peak_memory_bytes.push_back(
              s < static_cast<int>(e.report.devices.size()) ? e.report.devices[s].peak_memory_bytes : 0);
        }
      },
      &bar);
  bar.finish();

  double base = -1;
  for (const ThroughputCell& c : cells)
    if (c.stages == bk && c.micro_batches == bm && c.schedule == bs && c.feasible && c.throughput_samples_per_s > 0)
      base = c.throughput_samples_per_s;
  for (ThroughputCell& c : cells) c.normalized = base > 0 && c.feasible ? c.throughput_samples_per_s / base : -1;
  return cells;
}

Table throughput_table(const std::vector<ThroughputCell>& cells) {
  Table t;
  t.columns = {"stages",
               "micro_batches",
               "schedule",
               "feasible",
               "stages_used",
               "micro_batch_size",
               "parameters",
               "flops_per_iteration",
               "iteration_s",
               "throughput_samples_per_s",
               "normalized",
               "bubble_rate",
               "idle_share",
               "peak_memory_bytes",
               "device_memory_bytes",
               "stage_peak_memory_bytes",
               "reason"};
  for (const ThroughputCell& c : cells) {
    Json r{
        {"stages", c.stages}, {"micro_batches", c.micro_batches}, {"schedule", c.schedule}, {"feasible", c.feasible}};
    if (c.feasible) {
      r["stages_used"] = c.stages_used;
      r["micro_batch_size"] = c.micro_batch_size;
      r["parameters"] = c.parameters;
      r["flops_per_iteration"] = c.flops_per_iteration;
      r["stage_peak_memory_bytes"] = c.stage_peak_memory_bytes;
      r["iteration_s"] = c.iteration_s;
      r["throughput_samples_per_s"] = c.throughput_samples_per_s;
      if (c.normalized >= 0) r["normalized"] = c.normalized;
      r["bubble_rate"] = c.bubble_rate;
      r["idle_share"] = c.idle_share;
      r["peak_memory_bytes"] = c.peak_memory_bytes;
      r["device_memory_bytes"] = c.device_memory_bytes;
    } else {
      r["reason"] = c.reason;
    }
    t.add_row(r);
  }
  return t;
}

}  // namespace pw::whatif
