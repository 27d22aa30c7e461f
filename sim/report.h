// Report: the metrics of a simulated (or measured) run, computed from its Trace.
//
// Definitions (DESIGN.md "Simulation semantics"), per device d over the whole run:
//   busy_ns  = sum of the durations of d's compute ops (F, B, W, BW, allreduce, step);
//   span_ns  = last compute end - first compute start; idle_ns = span_ns - busy_ns;
//   cost_ns  = the largest span (ties: the lowest device), the "bottleneck" device;
//   bubble_rate = (cost_ns - busy_ns of that device) / cost_ns (0 when cost_ns == 0). Kept for
//     compatibility: it mixes the schedule's bubble with stage imbalance and communication;
//     the three figures below separate them;
//   makespan_ns = latest compute end (time 0 = start of the run);
//   iteration_ns = makespan_ns for one iteration; for K > 1 iterations the steady-state
//     period (start of iteration K-1 - start of iteration 0) / (K-1), an iteration's start
//     being the earliest start of its compute ops (asynchronous schedules have no flush, so
//     their last iteration drains; starts are periodic for both kinds);
//   throughput_samples_per_s = samples_per_iteration / iteration_ns;
//   peak_memory_bytes = the largest memory sample of the device;
//   max_in_flight = the most micro-batches with F started and last backward (BW, or W when
//     split) not yet finished; at equal times finishes count before starts.
// With K > 1 iterations busy/span/bubble cover all K iterations back to back.
//
// Figures that rank plans (0 when their denominator is 0), over the whole run of K iterations:
//   idle_share      = 1 - mean over devices of busy_ns / (K x iteration_ns), clamped to [0, 1]
//                     (for one iteration: the share of device-time spent waiting);
//   stage_imbalance = 1 - mean over devices of busy_ns / max over devices of busy_ns (the share
//                     of the busiest device's work that the others lack because stages are
//                     unequal; replicas are devices, so a replicated stage counts per replica);
//   schedule_bubble = the idle_share of the same schedule, devices and iterations simulated
//                     with every stage's costs equalised and transfers, all-reduce and step
//                     free: op kind X of stage s (F, B with its re-forward, W) takes
//                     r_s x mean over stages t of X_t / r_t (r = replicas; the plain mean without
//                     replication). For gpipe and 1f1b this is (p-1)/(m+p-1); for interleaved
//                     (p-1)/(v m+p-1); asynchronous schedules over many iterations tend to 0.
//                     Set by simulate() when SimOptions::schedule_bubble is on; summarize()
//                     cannot know it (it has no schedule) and leaves 0.
// What idle_share has beyond the other two is mostly communication and synchronisation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/json_util.h"
#include "sim/trace.h"

namespace pw::sim {

struct DeviceReport {
  int64_t busy_ns = 0;
  int64_t span_ns = 0;
  int64_t idle_ns = 0;
  int64_t first_start_ns = 0;
  int64_t last_end_ns = 0;
  int64_t peak_memory_bytes = 0;
  int max_in_flight = 0;
  bool operator==(const DeviceReport&) const = default;
};

struct Report {
  std::string schedule;  // schedule kind name
  int num_devices = 0;
  int num_stages = 0;
  int num_micro_batches = 0;
  int iterations = 1;
  int64_t samples_per_iteration = 0;
  int64_t makespan_ns = 0;
  int64_t iteration_ns = 0;
  int64_t cost_ns = 0;
  int bottleneck_device = 0;
  double bubble_rate = 0;
  double throughput_samples_per_s = 0;
  int64_t peak_memory_bytes = 0;  // largest over devices
  double schedule_bubble = 0;
  bool has_schedule_bubble = false;  // computed (simulate with SimOptions::schedule_bubble)
  double stage_imbalance = 0;
  double idle_share = 0;
  // Replicated schedules: replicas per stage (devices = their sum); empty when no stage is.
  std::vector<int> stage_replicas;
  std::vector<DeviceReport> devices;
  bool operator==(const Report&) const = default;
};

// What a trace does not say about the run it records.
struct RunInfo {
  std::string schedule;
  int num_stages = 0;
  int num_micro_batches = 0;
  int iterations = 1;
  int64_t samples_per_micro_batch = 1;
};

// Computes the report of a trace (predicted or measured). Devices 0..trace.num_devices-1.
Report summarize(const Trace& trace, const RunInfo& info);

// Fills the derived fields (idle, cost, bubble, makespan, iteration time, throughput, peak)
// from devices[*].busy/first_start/last_end/peak/in-flight and `iteration_start_ns` (per
// iteration, the earliest compute start). Shared by summarize() and the engine.
void finish_report(Report& r, const std::vector<int64_t>& iteration_start_ns);

// {"makespan_ms", "cost_ms", "iteration_ms", "bubble_rate", ["schedule_bubble" when computed],
//  "stage_imbalance", "idle_share", ["stage_replicas"], "throughput_samples_per_s",
//  "peak_memory_bytes", "stages": [{"device", "busy_ms", "idle_ms", "span_ms",
//  "peak_memory_bytes", "max_in_flight"}], ...}
void to_json(Json& j, const Report& r);
// "<schedule bubble>%<sep>stage imbalance <x>%<sep>idle share <y>%" ("n/a" for a schedule
// bubble not computed), for text outputs and the SVG subtitle.
std::string figures_text(const Report& r, const char* sep);
// A readable table for stdout.
std::string format_report(const Report& r);

}  // namespace pw::sim
