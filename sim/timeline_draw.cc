#include "sim/timeline_draw.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace pw::sim::draw {

using planner::OpKind;

namespace {

constexpr OpKind kKinds[] = {OpKind::F, OpKind::B, OpKind::W, OpKind::BW, OpKind::allreduce, OpKind::step};

bool drawn(const TraceEvent& e) { return !e.is_transfer && e.end_ns > e.start_ns; }

std::string label_of(const TraceEvent& e) {
  if (e.kind == OpKind::step || e.kind == OpKind::allreduce || e.micro_batch < 0)
    return std::string(planner::to_string(e.kind));
  return std::string(planner::to_string(e.kind)) + std::to_string(e.micro_batch);
}

}  // namespace

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

const char* op_fill(OpKind k) {
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

const char* op_legend(OpKind k) {
  switch (k) {
    case OpKind::F: return "F forward";
    case OpKind::B: return "B input grad";
    case OpKind::W: return "W weight grad";
    case OpKind::BW: return "BW backward";
    case OpKind::allreduce: return "allreduce";
    case OpKind::step: return "step";
    default: return "other";
  }
}

TimeUnit time_unit_for(int64_t span_ns) {
  if (span_ns >= 1'000'000'000) return {"s", 1e9};
  if (span_ns >= 1'000'000) return {"ms", 1e6};
  if (span_ns >= 1'000) return {"us", 1e3};
  return {"ns", 1};
}

std::vector<TimeTick> time_ticks(int64_t span_ns, const TimeUnit& unit) {
  const double span = std::max<double>(1, static_cast<double>(span_ns)) / unit.ns;
  const double raw = span / 10;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double f : {1.0, 2.0, 5.0})
    if (f * mag >= raw * (1 - 1e-12)) {
      step = f * mag;
      break;
    }
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  std::vector<TimeTick> ticks;
  for (int k = 0; k * step <= span * (1 + 1e-9) && k <= 11; ++k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, k * step);
    ticks.push_back({static_cast<int64_t>(std::llround(k * step * unit.ns)), buf});
  }
  return ticks;
}

bool boxes_too_thin(const Trace& t, const XMap& xm) {
  std::vector<int64_t> d;
  for (const TraceEvent& e : t.events)
    if (drawn(e)) d.push_back(e.end_ns - e.start_ns);
  if (d.empty()) return false;
  std::nth_element(d.begin(), d.begin() + d.size() / 4, d.end());
  return xm.w(d[d.size() / 4]) < 2.0;
}

std::vector<std::pair<int64_t, int64_t>> merge_spans(std::vector<std::pair<int64_t, int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& s : spans) {
    if (!out.empty() && s.first <= out.back().second) out.back().second = std::max(out.back().second, s.second);
    else out.push_back(s);
  }
  return out;
}

double busy_share(const Trace& t, int device, int64_t span_ns) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const TraceEvent& e : t.events)
    if (drawn(e) && e.device == device) spans.emplace_back(e.start_ns, e.end_ns);
  int64_t busy = 0;
  for (const auto& [a, b] : merge_spans(std::move(spans))) busy += b - a;
  return span_ns > 0 ? static_cast<double>(busy) / static_cast<double>(span_ns) : 0.0;
}

void draw_row(std::string& o, const Trace& t, int device, double y, double h, const XMap& xm, bool occupancy,
              int chunk_rows) {
  char buf[512];
  if (occupancy) {
    std::vector<OpKind> kinds;
    for (OpKind k : kKinds)
      if (std::any_of(t.events.begin(), t.events.end(),
                      [&](const TraceEvent& e) { return drawn(e) && e.device == device && e.kind == k; }))
        kinds.push_back(k);
    const double band = kinds.empty() ? h : h / static_cast<double>(kinds.size());
    for (size_t i = 0; i < kinds.size(); ++i) {
      std::vector<std::pair<int64_t, int64_t>> spans;
      for (const TraceEvent& e : t.events)
        if (drawn(e) && e.device == device && e.kind == kinds[i]) spans.emplace_back(e.start_ns, e.end_ns);
      for (const auto& [a, b] : merge_spans(std::move(spans))) {
        std::snprintf(buf, sizeof buf,
                      "<rect class=\"busy\" x=\"%.2f\" y=\"%.2f\" width=\"%.3f\" height=\"%.2f\" fill=\"%s\"/>\n",
                      xm.x(a), y + band * static_cast<double>(i), xm.w(b - a), band, op_fill(kinds[i]));
        o += buf;
      }
    }
    return;
  }
  const double font = h > 20 ? 11 : 8;
  for (const TraceEvent& e : t.events) {
    if (!drawn(e) || e.device != device) continue;
    const double x = xm.x(e.start_ns), w = xm.w(e.end_ns - e.start_ns);
    const bool light = chunk_rows > 0 && (e.stage / chunk_rows) % 2;
    std::snprintf(buf, sizeof buf,
                  "<rect class=\"op\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
                  "fill-opacity=\"%.2f\" stroke=\"#ffffff\" stroke-width=\"%.2f\"><title>%s stage %d iteration %d: "
                  "%.3f-%.3f ms</title></rect>\n",
                  x, y, w, h, op_fill(e.kind), light ? 0.62 : 1.0, w > 4 ? 0.8 : 0.0, label_of(e).c_str(), e.stage,
                  e.iteration, e.start_ns / 1e6, e.end_ns / 1e6);
    o += buf;
    const std::string label = e.micro_batch >= 0 ? std::to_string(e.micro_batch) : "";
    if (!label.empty() && w >= font * 0.62 * static_cast<double>(label.size()) + 3) {
      std::snprintf(buf, sizeof buf,
                    "<text class=\"mb\" x=\"%.2f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"middle\" "
                    "fill=\"#ffffff\">%s</text>\n",
                    x + w / 2, y + h / 2 + font * 0.36, font, label.c_str());
      o += buf;
    }
  }
}

void draw_transfers(std::string& o, const Trace& t, const XMap& xm, double row_h, const std::vector<double>& row_top,
                    bool occupancy, double gap) {
  char buf[384];
  const int rows = static_cast<int>(row_top.size());
  auto valid = [&](const TraceEvent& e) {
    return e.is_transfer && e.device >= 0 && e.device < rows && e.dst_device >= 0 && e.dst_device < rows &&
           e.dst_device != e.device;
  };
  if (!occupancy) {
    for (const TraceEvent& e : t.events) {
      if (!valid(e)) continue;
      const bool down = e.dst_device > e.device;
      const double ys = down ? row_top[e.device] + row_h : row_top[e.device];
      const double yr = down ? row_top[e.dst_device] : row_top[e.dst_device] + row_h;
      std::snprintf(buf, sizeof buf,
                    "<line class=\"transfer\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333333\" "
                    "stroke-width=\"0.8\" stroke-opacity=\"0.55\"><title>%s %d: device %d to %d, %lld bytes, "
                    "%.3f ms</title></line>\n",
                    xm.x(e.start_ns), ys, xm.x(e.end_ns), yr, e.kind == OpKind::F ? "activation" : "gradient",
                    e.micro_batch, e.device, e.dst_device, static_cast<long long>(e.bytes),
                    (e.end_ns - e.start_ns) / 1e6);
      o += buf;
    }
    return;
  }
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> links;
  for (const TraceEvent& e : t.events)
    if (valid(e) && e.end_ns > e.start_ns) links[{e.device, e.dst_device}].emplace_back(e.start_ns, e.end_ns);
  const double h = std::max(1.0, (gap - 2) / 2);
  for (auto& [link, spans] : links) {
    const bool down = link.second > link.first;
    const double y = down ? row_top[link.first] + row_h + 1 : row_top[link.first] - 1 - h;
    for (const auto& [a, b] : merge_spans(std::move(spans))) {
      std::snprintf(buf, sizeof buf,
                    "<rect class=\"transfer-busy\" x=\"%.2f\" y=\"%.2f\" width=\"%.3f\" height=\"%.2f\" "
                    "fill=\"#555555\"><title>link %d to %d busy</title></rect>\n",
                    xm.x(a), y, xm.w(b - a), h, link.first, link.second);
      o += buf;
    }
  }
}

void draw_time_axis(std::string& o, const XMap& xm, double y, const std::string& prefix) {
  char buf[384];
  std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", xm.left,
                y, xm.left + xm.width, y);
  o += buf;
  const TimeUnit unit = time_unit_for(xm.span_ns);
  for (const TimeTick& t : time_ticks(xm.span_ns, unit)) {
    if (t.ns > xm.span_ns) break;
    const double x = xm.x(t.ns);
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333\"/>\n"
                  "<text class=\"tick\" x=\"%.2f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" "
                  "fill=\"#333\">%s</text>\n",
                  x, y, x, y + 5, x, y + 18, t.label.c_str());
    o += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" fill=\"#333\">%s (%s)</text>\n",
                xm.left + xm.width / 2, y + 34, xml_escape(prefix).c_str(), unit.name);
  o += buf;
}

void draw_iteration_mark(std::string& o, double x, double y0, double y1, const std::string& label) {
  char buf[384];
  std::snprintf(buf, sizeof buf,
                "<line class=\"iteration\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#222\" "
                "stroke-width=\"1\" stroke-dasharray=\"4 3\"/>\n",
                x, y0 - 4, x, y1);
  o += buf;
  if (!label.empty()) {
    std::snprintf(buf, sizeof buf, "<text x=\"%.2f\" y=\"%.1f\" font-size=\"10\" fill=\"#222\">%s</text>\n", x + 3,
                  y0 - 6, xml_escape(label).c_str());
    o += buf;
  }
}

void draw_legend(std::string& o, const std::vector<const Trace*>& traces, double x, double y, bool with_transfers,
                 bool transfer_strips) {
  char buf[384];
  for (OpKind k : kKinds) {
    bool present = false;
    for (const Trace* t : traces)
      present = present || std::any_of(t->events.begin(), t->events.end(),
                                       [k](const TraceEvent& e) { return drawn(e) && e.kind == k; });
    if (!present) continue;
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" fill=\"%s\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333\">%s</text>\n",
                  x, y - 10, op_fill(k), x + 19, y, op_legend(k));
    o += buf;
    x += 125;
  }
  if (with_transfers && transfer_strips) {
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"4\" fill=\"#555555\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333\">link busy (between the rows)</text>\n",
                  x, y - 6, x + 19, y);
    o += buf;
    x += 200;
  } else if (with_transfers) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333\">transfer (send to arrival)</text>\n",
                  x, y + 2, x + 14, y - 10, x + 19, y);
    o += buf;
    x += 190;
  }
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" stroke-dasharray=\"4 3\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333\">iteration start</text>\n",
                x + 7, y + 2, x + 7, y - 11, x + 19, y);
  o += buf;
}

}  // namespace pw::sim::draw
