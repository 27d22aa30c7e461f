#include "sim/trace_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "models/error.h"

namespace pw::sim {

using planner::OpKind;

void to_json(Json& j, const Trace& t) {
  Json events = Json::array();
  for (const TraceEvent& e : t.events) {
    Json o = {{"device", e.device},         {"op", std::string(to_string(e.kind))}, {"stage", e.stage},
              {"micro_batch", e.micro_batch}, {"iteration", e.iteration},           {"start_ns", e.start_ns},
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
  t.num_devices = static_cast<int>(get_int(j, "num_devices", "", 1));
  const Json& events = require_array(j, "events", "");
  for (size_t k = 0; k < events.size(); ++k) {
    const std::string at = join_path("/events", k);
    const Json& o = events[k];
    require_object(o, at);
    TraceEvent e;
    e.device = static_cast<int>(get_int(o, "device", at));
    if (e.device >= t.num_devices) throw InputError(at + "/device: out of range");
    e.kind = planner::parse_op_kind(get_string(o, "op", at), at + "/op");
    e.stage = static_cast<int>(get_int(o, "stage", at, -1));
    e.micro_batch = static_cast<int>(get_int(o, "micro_batch", at, -1));
    e.iteration = static_cast<int>(get_int(o, "iteration", at));
    e.start_ns = get_int(o, "start_ns", at);
    e.end_ns = get_int(o, "end_ns", at);
    if (e.end_ns < e.start_ns) throw InputError(at + "/end_ns: before start_ns");
    e.is_transfer = get_bool_or(o, "transfer", at, false);
    if (e.is_transfer) {
      e.dst_device = static_cast<int>(get_int(o, "dst_device", at));
      e.bytes = get_int_or(o, "bytes", at, 0);
    }
    t.events.push_back(e);
  }
  const Json& memory = require_array(j, "memory", "");
  for (size_t k = 0; k < memory.size(); ++k) {
    const std::string at = join_path("/memory", k);
    const Json& m = memory[k];
    if (!m.is_array() || m.size() != 3 || !m[0].is_number_integer() || !m[1].is_number_integer() ||
        !m[2].is_number_integer())
      throw InputError(at + ": expected [device, time_ns, bytes]");
    t.memory.push_back({m[0].get<int>(), m[1].get<int64_t>(), m[2].get<int64_t>()});
  }
  return t;
}

namespace {

std::string event_name(const TraceEvent& e) {
  if (e.kind == OpKind::step || e.kind == OpKind::allreduce || e.micro_batch < 0)
    return std::string(to_string(e.kind));
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

namespace {

const char* fill_of(OpKind k) {
  switch (k) {
    case OpKind::F: return "#4e79a7";
    case OpKind::B: return "#f28e2b";
    case OpKind::W: return "#59a14f";
    case OpKind::BW: return "#e15759";
    case OpKind::allreduce: return "#b07aa1";
    case OpKind::step: return "#79706e";
    default: return "#bab0ac";
  }
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A "nice" tick step (1, 2, 5 x 10^k) giving about `target` ticks over `span`.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * mag >= raw) return f * mag;
  return 10 * mag;
}

}  // namespace

std::string timeline_svg(const Trace& t, const Report& r, const std::string& title) {
  const int rows = std::max(1, t.num_devices);
  int64_t end = 1;
  for (const TraceEvent& e : t.events) end = std::max(end, e.end_ns);
  const double left = 80, right = 24, top = 64, row_h = rows > 32 ? 12 : 28, gap = rows > 32 ? 2 : 6;
  const double width = 1200, plot_w = width - left - right;
  const double height = top + rows * (row_h + gap) + 70;
  const double scale = plot_w / static_cast<double>(end);
  std::string o;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "font-family=\"Helvetica, Arial, sans-serif\">\n",
                width, height, width, height);
  o += buf;
  o += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  // Peak memory only when the costs carried a memory model (uniform runs have none).
  char memory[64] = "";
  if (r.peak_memory_bytes > 0)
    std::snprintf(memory, sizeof memory, "  |  peak memory %.1f MiB", static_cast<double>(r.peak_memory_bytes) / (1 << 20));
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.0f\" y=\"26\" font-size=\"17\" font-weight=\"bold\" fill=\"#222\">%s</text>\n"
                "<text x=\"%.0f\" y=\"46\" font-size=\"13\" fill=\"#444\">schedule bubble %s  |  makespan %.3f ms  |  "
                "cost %.3f ms (device %d)%s</text>\n",
                left, xml_escape(title).c_str(), left, figures_text(r, "  |  ").c_str(), r.makespan_ns / 1e6,
                r.cost_ns / 1e6, r.bottleneck_device, memory);
  o += buf;
  // Rows.
  for (int d = 0; d < rows; ++d) {
    const double y = top + d * (row_h + gap);
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f3f3\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"end\" fill=\"#333\">device %d</text>\n",
                  left, y, plot_w, row_h, left - 8, y + row_h / 2 + 4, rows > 32 ? 9 : 12, d);
    o += buf;
  }
  // Boxes.
  for (const TraceEvent& e : t.events) {
    if (e.is_transfer || e.device < 0 || e.device >= rows) continue;
    const double x = left + e.start_ns * scale, w = std::max(0.5, (e.end_ns - e.start_ns) * scale);
    const double y = top + e.device * (row_h + gap);
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"%.2f\" "
                  "stroke=\"#ffffff\" stroke-width=\"%.2f\"><title>%s stage %d iteration %d: %.3f-%.3f ms</title></rect>\n",
                  x, y, w, row_h, fill_of(e.kind), (e.stage / rows) % 2 ? 0.62 : 1.0, w > 3 ? 0.8 : 0.0,
                  event_name(e).c_str(), e.stage, e.iteration,
                  e.start_ns / 1e6, e.end_ns / 1e6);
    o += buf;
    const std::string label = e.micro_batch >= 0 ? std::to_string(e.micro_batch) : "";
    const double font = row_h > 20 ? 11 : 8;
    if (!label.empty() && w >= font * 0.62 * label.size() + 3) {
      std::snprintf(buf, sizeof buf,
                    "<text x=\"%.2f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"middle\" fill=\"#ffffff\">%s</text>\n",
                    x + w / 2, y + row_h / 2 + font * 0.36, font, label.c_str());
      o += buf;
    }
  }
  // Time axis.
  const double axis_y = top + rows * (row_h + gap) + 4;
  std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left,
                axis_y, left + plot_w, axis_y);
  o += buf;
  const double end_ms = static_cast<double>(end) / 1e6;
  const double step = nice_step(end_ms, 10);
  for (int k = 0; k * step <= end_ms * (1 + 1e-9); ++k) {
    const double ms = k * step, x = left + ms * 1e6 * scale;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333\"/>\n"
                  "<text x=\"%.2f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#333\">%g</text>\n",
                  x, axis_y, x, axis_y + 5, x, axis_y + 18, ms);
    o += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" fill=\"#333\">time (ms)</text>\n",
                left + plot_w / 2, axis_y + 34);
  o += buf;
  // Legend (kinds present).
  double lx = left;
  const double ly = axis_y + 48;
  for (OpKind k : {OpKind::F, OpKind::B, OpKind::W, OpKind::BW, OpKind::allreduce, OpKind::step}) {
    bool present = std::any_of(t.events.begin(), t.events.end(),
                               [k](const TraceEvent& e) { return !e.is_transfer && e.kind == k && e.end_ns > e.start_ns; });
    if (!present) continue;
    const char* name = k == OpKind::F ? "F forward" : k == OpKind::B ? "B input grad" : k == OpKind::W ? "W weight grad"
                       : k == OpKind::BW ? "BW backward" : k == OpKind::allreduce ? "allreduce" : "step";
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" fill=\"%s\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333\">%s</text>\n",
                  lx, ly - 10, fill_of(k), lx + 19, ly, name);
    o += buf;
    lx += 130;
  }
  o += "</svg>\n";
  return o;
}

void write_timeline_files(const Trace& t, const Report& r, const std::string& title, const std::string& trace_file,
                          const std::string& svg_file) {
  if (!trace_file.empty()) write_file_atomic(trace_file, chrome_trace_json(t).dump() + "\n");
  if (!svg_file.empty()) write_file_atomic(svg_file, timeline_svg(t, r, title));
}

}  // namespace pw::sim
