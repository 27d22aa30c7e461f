#include "sim/trace_trim.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "models/error.h"
#include "sim/trace_io.h"

namespace pw::sim {

std::vector<IterationSummary> iteration_summaries(const Trace& t) {
  std::map<int, IterationSummary> by;
  for (const TraceEvent& e : t.events) {
    if (e.is_transfer) continue;
    auto [it, added] = by.try_emplace(e.iteration, IterationSummary{e.iteration, e.start_ns, e.end_ns});
    if (!added) {
      it->second.start_ns = std::min(it->second.start_ns, e.start_ns);
      it->second.end_ns = std::max(it->second.end_ns, e.end_ns);
    }
  }
  std::vector<IterationSummary> out;
  out.reserve(by.size());
  for (const auto& [k, s] : by) out.push_back(s);
  return out;
}

TrimmedTrace trim_trace(const Trace& t, int keep) {
  PW_CHECK(keep >= 1, "trim_trace: keep must be >= 1");
  TrimmedTrace r;
  r.iterations = iteration_summaries(t);
  std::set<int> numbers;
  for (const TraceEvent& e : t.events) numbers.insert(e.iteration);
  const int n = static_cast<int>(numbers.size());
  // The smallest iteration number kept: the keep-th largest.
  const int first = n <= keep ? std::numeric_limits<int>::min() : *std::next(numbers.begin(), n - keep);
  r.kept_iterations = std::min(n, keep);
  r.trace.source = t.source;
  r.trace.num_devices = t.num_devices;
  int64_t cut = std::numeric_limits<int64_t>::max();
  for (const TraceEvent& e : t.events) {
    if (e.iteration < first) continue;
    r.trace.events.push_back(e);
    cut = std::min(cut, e.start_ns);
  }
  if (n <= keep) {
    r.trace.memory = t.memory;
    return r;
  }
  // Per device, the index of its last sample before the cut (the level the kept part starts at).
  std::map<int, size_t> before;
  for (size_t i = 0; i < t.memory.size(); ++i)
    if (t.memory[i].time_ns < cut) before[t.memory[i].device] = i;
  for (size_t i = 0; i < t.memory.size(); ++i) {
    const MemorySample& m = t.memory[i];
    const auto b = before.find(m.device);
    if (m.time_ns >= cut || (b != before.end() && b->second == i)) r.trace.memory.push_back(m);
  }
  return r;
}

Json chrome_trace_json(const TrimmedTrace& t) {
  Json j = chrome_trace_json(t.trace);
  Json& ev = j["traceEvents"];
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 2}, {"tid", 0}, {"args", {{"name", "iterations"}}}});
  for (const IterationSummary& s : t.iterations)
    ev.push_back({{"name", "iteration " + std::to_string(s.iteration)},
                  {"cat", "iteration"},
                  {"ph", "X"},
                  {"pid", 2},
                  {"tid", 0},
                  {"ts", static_cast<double>(s.start_ns) / 1000.0},
                  {"dur", static_cast<double>(s.end_ns - s.start_ns) / 1000.0},
                  {"args",
                   {{"iteration", s.iteration},
                    {"start_ns", s.start_ns},
                    {"end_ns", s.end_ns},
                    {"duration_ns", s.end_ns - s.start_ns}}}});
  j["otherData"]["iterations"] = static_cast<int64_t>(t.iterations.size());
  j["otherData"]["kept_iterations"] = t.kept_iterations;
  return j;
}

}  // namespace pw::sim
