#include "sim/report.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "models/error.h"

namespace pw::sim {

void finish_report(Report& r, const std::vector<int64_t>& iteration_start_ns) {
  r.cost_ns = 0;
  r.bottleneck_device = 0;
  r.makespan_ns = 0;
  r.peak_memory_bytes = 0;
  for (size_t d = 0; d < r.devices.size(); ++d) {
    DeviceReport& dr = r.devices[d];
    dr.span_ns = dr.last_end_ns - dr.first_start_ns;
    dr.idle_ns = dr.span_ns - dr.busy_ns;
    if (dr.span_ns > r.cost_ns) {
      r.cost_ns = dr.span_ns;
      r.bottleneck_device = static_cast<int>(d);
    }
    r.makespan_ns = std::max(r.makespan_ns, dr.last_end_ns);
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, dr.peak_memory_bytes);
  }
  r.bubble_rate = r.cost_ns > 0 ? static_cast<double>(r.cost_ns - r.devices[r.bottleneck_device].busy_ns) /
                                      static_cast<double>(r.cost_ns)
                                : 0.0;
  const int k = static_cast<int>(iteration_start_ns.size());
  double period = static_cast<double>(r.makespan_ns);
  if (k > 1) period = static_cast<double>(iteration_start_ns[k - 1] - iteration_start_ns[0]) / (k - 1);
  r.iteration_ns = static_cast<int64_t>(period + 0.5);
  r.throughput_samples_per_s = period > 0 ? static_cast<double>(r.samples_per_iteration) * 1e9 / period : 0.0;
  double busy = 0, busiest = 0;
  for (const DeviceReport& dr : r.devices) {
    busy += static_cast<double>(dr.busy_ns);
    busiest = std::max(busiest, static_cast<double>(dr.busy_ns));
  }
  const double mean = r.devices.empty() ? 0.0 : busy / static_cast<double>(r.devices.size());
  r.stage_imbalance = busiest > 0 ? 1.0 - mean / busiest : 0.0;
  const double run = static_cast<double>(r.iteration_ns) * std::max(1, r.iterations);
  r.idle_share = run > 0 ? std::clamp(1.0 - mean / run, 0.0, 1.0) : 0.0;
}

Report summarize(const Trace& trace, const RunInfo& info) {
  if (info.iterations < 1) throw InputError("summarize: iterations must be >= 1");
  Report r;
  r.schedule = info.schedule;
  r.num_devices = trace.num_devices;
  r.num_stages = info.num_stages;
  r.num_micro_batches = info.num_micro_batches;
  r.iterations = info.iterations;
  r.samples_per_iteration = info.samples_per_micro_batch * info.num_micro_batches;
  r.devices.assign(trace.num_devices, DeviceReport{});
  std::vector<int64_t> first(trace.num_devices, std::numeric_limits<int64_t>::max());
  std::vector<int64_t> iter_start(info.iterations, std::numeric_limits<int64_t>::max());
  // In-flight deltas per device: (time, delta); -1 sorts before +1 at equal times.
  std::vector<std::vector<std::pair<int64_t, int>>> deltas(trace.num_devices);
  for (const TraceEvent& e : trace.events) {
    if (e.is_transfer) continue;
    if (e.device < 0 || e.device >= trace.num_devices)
      throw InputError("trace: event on device " + std::to_string(e.device) + " out of range");
    DeviceReport& dr = r.devices[e.device];
    dr.busy_ns += e.end_ns - e.start_ns;
    first[e.device] = std::min(first[e.device], e.start_ns);
    dr.last_end_ns = std::max(dr.last_end_ns, e.end_ns);
    if (e.iteration >= 0 && e.iteration < info.iterations)
      iter_start[e.iteration] = std::min(iter_start[e.iteration], e.start_ns);
    using planner::OpKind;
    if (e.kind == OpKind::F) deltas[e.device].push_back({e.start_ns, +1});
    if (e.kind == OpKind::BW || e.kind == OpKind::W) deltas[e.device].push_back({e.end_ns, -1});
  }
  for (int d = 0; d < trace.num_devices; ++d) {
    DeviceReport& dr = r.devices[d];
    dr.first_start_ns = first[d] == std::numeric_limits<int64_t>::max() ? 0 : first[d];
    std::sort(deltas[d].begin(), deltas[d].end());
    int cur = 0;
    for (const auto& [t, delta] : deltas[d]) dr.max_in_flight = std::max(dr.max_in_flight, cur += delta);
  }
  for (const MemorySample& m : trace.memory)
    if (m.device >= 0 && m.device < trace.num_devices)
      r.devices[m.device].peak_memory_bytes = std::max(r.devices[m.device].peak_memory_bytes, m.bytes);
  for (int64_t& t : iter_start)
    if (t == std::numeric_limits<int64_t>::max()) t = 0;
  finish_report(r, iter_start);
  return r;
}

namespace {
double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
}  // namespace

void to_json(Json& j, const Report& r) {
  Json stages = Json::array();
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceReport& dr = r.devices[d];
    stages.push_back({{"device", d},
                      {"busy_ms", ms(dr.busy_ns)},
                      {"idle_ms", ms(dr.idle_ns)},
                      {"span_ms", ms(dr.span_ns)},
                      {"first_start_ms", ms(dr.first_start_ns)},
                      {"last_end_ms", ms(dr.last_end_ns)},
                      {"peak_memory_bytes", dr.peak_memory_bytes},
                      {"max_in_flight", dr.max_in_flight}});
  }
  j = Json{{"format", format_tag("report", 1)},
           {"schedule", r.schedule},
           {"num_devices", r.num_devices},
           {"num_stages", r.num_stages},
           {"num_micro_batches", r.num_micro_batches},
           {"iterations", r.iterations},
           {"samples_per_iteration", r.samples_per_iteration},
           {"makespan_ms", ms(r.makespan_ns)},
           {"makespan_ns", r.makespan_ns},
           {"iteration_ms", ms(r.iteration_ns)},
           {"cost_ms", ms(r.cost_ns)},
           {"cost_ns", r.cost_ns},
           {"bottleneck_device", r.bottleneck_device},
           {"bubble_rate", r.bubble_rate},
           {"stage_imbalance", r.stage_imbalance},
           {"idle_share", r.idle_share},
           {"throughput_samples_per_s", r.throughput_samples_per_s},
           {"peak_memory_bytes", r.peak_memory_bytes},
           {"stages", stages}};
  if (r.has_schedule_bubble) j["schedule_bubble"] = r.schedule_bubble;
  if (!r.stage_replicas.empty()) j["stage_replicas"] = r.stage_replicas;
}

std::string figures_text(const Report& r, const char* sep) {
  char buf[160];
  char bubble[32] = "n/a";
  if (r.has_schedule_bubble) std::snprintf(bubble, sizeof bubble, "%.2f%%", 100.0 * r.schedule_bubble);
  std::snprintf(buf, sizeof buf, "%s%sstage imbalance %.2f%%%sidle share %.2f%%", bubble, sep,
                100.0 * r.stage_imbalance, sep, 100.0 * r.idle_share);
  return buf;
}

std::string format_report(const Report& r) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "schedule %s: %d devices, %d stages, %d micro-batches, %d iteration%s\n",
                r.schedule.c_str(), r.num_devices, r.num_stages, r.num_micro_batches, r.iterations,
                r.iterations == 1 ? "" : "s");
  out += buf;
  if (!r.stage_replicas.empty()) {
    out += "replicas per stage:";
    for (size_t s = 0; s < r.stage_replicas.size(); ++s) out += (s ? ", " : " ") + std::to_string(r.stage_replicas[s]);
    out += " (round-robin over micro-batches; " + std::to_string(r.num_devices) + " devices)\n";
  }
  std::snprintf(buf, sizeof buf,
                "makespan %.3f ms  iteration %.3f ms  longest span %.3f ms (device %d, idle %.2f%% of it)  "
                "throughput %.1f samples/s  peak memory %.1f MiB\n",
                ms(r.makespan_ns), ms(r.iteration_ns), ms(r.cost_ns), r.bottleneck_device, 100.0 * r.bubble_rate,
                r.throughput_samples_per_s, static_cast<double>(r.peak_memory_bytes) / (1 << 20));
  out += buf;
  out += "schedule bubble " + figures_text(r, "  ") + "\n";
  out += "device    busy_ms    idle_ms    span_ms   busy%  in-flight  peak_memory_MiB\n";
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceReport& dr = r.devices[d];
    std::snprintf(buf, sizeof buf, "%6zu %10.3f %10.3f %10.3f  %5.1f%% %10d %16.1f\n", d, ms(dr.busy_ns),
                  ms(dr.idle_ns), ms(dr.span_ns),
                  dr.span_ns > 0 ? 100.0 * static_cast<double>(dr.busy_ns) / static_cast<double>(dr.span_ns) : 0.0,
                  dr.max_in_flight, static_cast<double>(dr.peak_memory_bytes) / (1 << 20));
    out += buf;
  }
  return out;
}

}  // namespace pw::sim
