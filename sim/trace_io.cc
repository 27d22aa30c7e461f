#include "sim/trace_io.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

#include "models/error.h"
#include "models/limits.h"

namespace pw::sim {

namespace lim = models::limits;
using models::get_limited;
using models::get_limited_int;
using models::get_limited_or;

using planner::OpKind;

void to_json(Json& j, const Trace& t) {
  Json events = Json::array();
  for (const TraceEvent& e : t.events) {
    Json o = {{"device", e.device},       {"op", std::string(to_string(e.kind))},
              {"stage", e.stage},         {"micro_batch", e.micro_batch},
              {"iteration", e.iteration}, {"start_ns", e.start_ns},
              {"end_ns", e.end_ns}};
    if (e.is_transfer) {
      o["transfer"] = true;
      o["dst_device"] = e.dst_device;
      o["bytes"] = e.bytes;
    }
    events.push_back(std::move(o));
  }
  Json memory = Json::array();
  for (const MemorySample& m : t.memory) memory.push_back(Json::array({m.device, m.time_ns, m.bytes}));
  j = Json{{"format", format_tag("trace", 1)},
           {"source", t.source},
           {"num_devices", t.num_devices},
           {"events", std::move(events)},
           {"memory", std::move(memory)}};
}

Trace trace_from_json(const Json& j) {
  require_object(j, "");
  check_format(j, "trace", 1, "");
  Trace t;
  t.source = get_string(j, "source", "");
  t.num_devices = get_limited_int(j, "num_devices", "", lim::kDevices);
  const models::Limit device{0, t.num_devices - 1};
  const Json& events = require_array(j, "events", "");
  for (size_t k = 0; k < events.size(); ++k) {
    const std::string at = join_path("/events", k);
    const Json& o = events[k];
    require_object(o, at);
    TraceEvent e;
    e.device = static_cast<int>(get_limited(o, "device", at, device));
    e.kind = planner::parse_op_kind(get_string(o, "op", at), at + "/op");
    e.stage = get_limited_int(o, "stage", at, {-1, lim::kStages.max - 1});
    e.micro_batch = get_limited_int(o, "micro_batch", at, {-1, lim::kMicroBatches.max - 1});
    e.iteration = get_limited_int(o, "iteration", at, {0, std::numeric_limits<int>::max()});
    e.start_ns = get_limited(o, "start_ns", at, lim::kTimestampNs);
    e.end_ns = get_limited(o, "end_ns", at, lim::kTimestampNs);
    if (e.end_ns < e.start_ns) throw InputError(at + "/end_ns: before start_ns");
    e.is_transfer = get_bool_or(o, "transfer", at, false);
    if (e.is_transfer) {
      e.dst_device = static_cast<int>(get_limited(o, "dst_device", at, device));
      e.bytes = get_limited_or(o, "bytes", at, 0, lim::kBytes);
    }
    t.events.push_back(e);
  }
  const Json& memory = require_array(j, "memory", "");
  for (size_t k = 0; k < memory.size(); ++k) {
    const std::string at = join_path("/memory", k);
    const Json& m = memory[k];
    if (!m.is_array() || m.size() != 3) throw InputError(at + ": expected [device, time_ns, bytes]");
    t.memory.push_back({static_cast<int>(models::limited_value(m[0], join_path(at, size_t{0}), device)),
                        models::limited_value(m[1], join_path(at, size_t{1}), lim::kTimestampNs),
                        models::limited_value(m[2], join_path(at, size_t{2}), lim::kBytes)});
  }
  return t;
}

namespace {

std::string event_name(const TraceEvent& e) {
  if (e.kind == OpKind::step || e.kind == OpKind::allreduce || e.micro_batch < 0) return std::string(to_string(e.kind));
  return std::string(to_string(e.kind)) + std::to_string(e.micro_batch);
}

double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace

Json chrome_trace_json(const Trace& t) {
  Json ev = Json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "devices"}}}});
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "transfers"}}}});
  for (int d = 0; d < t.num_devices; ++d) {
    ev.push_back({{"name", "thread_name"},
                  {"ph", "M"},
                  {"pid", 0},
                  {"tid", d},
                  {"args", {{"name", "device " + std::to_string(d)}}}});
    ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", d}, {"args", {{"sort_index", d}}}});
  }
  std::map<std::pair<int, int>, int> links;
  for (const TraceEvent& e : t.events) {
    if (!e.is_transfer) {
      ev.push_back({{"name", event_name(e)},
                    {"cat", std::string(to_string(e.kind))},
                    {"ph", "X"},
                    {"pid", 0},
                    {"tid", e.device},
                    {"ts", us(e.start_ns)},
                    {"dur", us(e.end_ns - e.start_ns)},
                    {"args", {{"stage", e.stage}, {"micro_batch", e.micro_batch}, {"iteration", e.iteration}}}});
      continue;
    }
    auto [it, added] = links.emplace(std::pair{e.device, e.dst_device}, static_cast<int>(links.size()));
    if (added)
      ev.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"tid", it->second},
                    {"args", {{"name", "d" + std::to_string(e.device) + "->d" + std::to_string(e.dst_device)}}}});
    ev.push_back({{"name", (e.kind == OpKind::F ? "act" : "grad") + std::to_string(e.micro_batch)},
                  {"cat", "transfer"},
                  {"ph", "X"},
                  {"pid", 1},
                  {"tid", it->second},
                  {"ts", us(e.start_ns)},
                  {"dur", us(e.end_ns - e.start_ns)},
                  {"args", {{"stage", e.stage}, {"micro_batch", e.micro_batch}, {"bytes", e.bytes}}}});
  }
  for (const MemorySample& m : t.memory)
    ev.push_back({{"name", "memory d" + std::to_string(m.device)},
                  {"ph", "C"},
                  {"pid", 0},
                  {"tid", m.device},
                  {"ts", us(m.time_ns)},
                  {"args", {{"bytes", m.bytes}}}});
  return Json{{"format", "pipewright.chrome-trace/1"},
              {"traceEvents", std::move(ev)},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"source", t.source}}}};
}

void write_timeline_files(const Trace& t, const Report& r, const std::string& title, const std::string& trace_file,
                          const std::string& svg_file) {
  if (!trace_file.empty()) write_file_atomic(trace_file, chrome_trace_json(t).dump() + "\n");
  if (!svg_file.empty()) write_file_atomic(svg_file, timeline_svg(t, r, title));
}

}  // namespace pw::sim
