#include "sim/compare_svg.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

namespace pw::sim {

namespace {

using planner::OpKind;

const char* fill(OpKind k) {
  switch (k) {
    case OpKind::F: return "#4e79a7";
    case OpKind::B: return "#f28e2b";
    case OpKind::W: return "#59a14f";
    case OpKind::BW: return "#e15759";
    case OpKind::step: return "#79706e";
    default: return "#bab0ac";
  }
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

int64_t end_of(const Trace& t) {
  int64_t e = 0;
  for (const auto& ev : t.events)
    if (!ev.is_transfer) e = std::max(e, ev.end_ns);
  return e;
}

// Busy ns per stage (step: counted on its device's first stage, as "step").
std::map<int, int64_t> busy(const Trace& t) {
  std::map<int, int64_t> b;
  for (const auto& ev : t.events)
    if (!ev.is_transfer && ev.stage >= 0) b[ev.stage] += ev.end_ns - ev.start_ns;
  return b;
}

}  // namespace

Trace steady_iteration(const Trace& t, int iteration) {
  Trace out;
  out.source = t.source;
  out.num_devices = t.num_devices;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (const auto& ev : t.events)
    if (!ev.is_transfer && ev.iteration == iteration) {
      lo = std::min(lo, ev.start_ns);
      hi = std::max(hi, ev.end_ns);
    }
  if (lo > hi) return out;
  for (auto ev : t.events)
    if (!ev.is_transfer && ev.iteration == iteration) {
      ev.start_ns -= lo;
      ev.end_ns -= lo;
      ev.iteration = 0;
      out.events.push_back(ev);
    }
  for (auto m : t.memory)
    if (m.time_ns >= lo && m.time_ns <= hi) {
      m.time_ns -= lo;
      out.memory.push_back(m);
    }
  return out;
}

std::string compare_svg(const Trace& predicted, const Trace& measured, const std::string& title) {
  const int devices = std::max(predicted.num_devices, measured.num_devices);
  const double span = static_cast<double>(std::max<int64_t>(1, std::max(end_of(predicted), end_of(measured))));
  const double left = 150, width = 1000, row = 26, gap = 14, top = 70;
  const auto pb = busy(predicted), mb = busy(measured);
  std::map<int, int> stages;
  for (const auto& [s, v] : pb) stages[s] = 1;
  for (const auto& [s, v] : mb) stages[s] = 1;
  const double table_top = top + devices * (2 * row + gap) + 50;
  const double height = table_top + 30 + 20 * static_cast<double>(stages.size() + 1) + 20;
  std::string o;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n"
                "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
                "<text x=\"%.0f\" y=\"26\" font-size=\"17\" font-weight=\"bold\" fill=\"#222\">%s</text>\n"
                "<text x=\"%.0f\" y=\"46\" font-size=\"13\" fill=\"#444\">iteration: predicted %.3f ms, measured "
                "%.3f ms (%+.1f%%)</text>\n",
                left + width + 40, height, left, escape(title).c_str(), left, end_of(predicted) / 1e6,
                end_of(measured) / 1e6,
                end_of(measured) > 0 ? 100.0 * (double(end_of(predicted)) / double(end_of(measured)) - 1) : 0.0);
  o += buf;
  auto x_of = [&](int64_t t) { return left + width * static_cast<double>(t) / span; };
  for (int d = 0; d < devices; ++d)
    for (int which = 0; which < 2; ++which) {
      const Trace& t = which == 0 ? predicted : measured;
      const double y = top + d * (2 * row + gap) + which * row;
      std::snprintf(buf, sizeof buf,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n"
                    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\" fill=\"#333\">worker %d %s</text>\n",
                    left, y, width, row - 4, which == 0 ? "#f3f6fb" : "#f7f3ef", left - 8, y + row / 2 + 2, d,
                    which == 0 ? "predicted" : "measured");
      o += buf;
      for (const auto& ev : t.events) {
        if (ev.is_transfer || ev.device != d) continue;
        const double x0 = x_of(ev.start_ns), x1 = x_of(ev.end_ns);
        std::snprintf(buf, sizeof buf,
                      "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" stroke=\"#fff\" "
                      "stroke-width=\"0.5\"><title>%s%d stage %d: %.3f ms</title></rect>\n",
                      x0, y + 1, std::max(0.5, x1 - x0), row - 6, fill(ev.kind),
                      std::string(planner::to_string(ev.kind)).c_str(), ev.micro_batch, ev.stage,
                      (ev.end_ns - ev.start_ns) / 1e6);
        o += buf;
        if (x1 - x0 > 16 && ev.micro_batch >= 0) {
          std::snprintf(buf, sizeof buf,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\" fill=\"#fff\">%d</text>\n",
                        (x0 + x1) / 2, y + row / 2 + 1, ev.micro_batch);
          o += buf;
        }
      }
    }
  // Time axis.
  const double axis_y = top + devices * (2 * row + gap) + 4;
  std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left,
                axis_y, left + width, axis_y);
  o += buf;
  for (int k = 0; k <= 10; ++k) {
    const double x = left + width * k / 10.0;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#333\">%.2f</text>\n",
                  x, axis_y, x, axis_y + 5, x, axis_y + 18, span * k / 10.0 / 1e6);
    o += buf;
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#333\">ms</text>\n",
                left + width + 8, axis_y + 32);
  o += buf;
  // Legend.
  double lx = left;
  for (OpKind k : {OpKind::F, OpKind::B, OpKind::W, OpKind::BW, OpKind::step}) {
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"54\" width=\"12\" height=\"10\" fill=\"%s\"/>"
                  "<text x=\"%.1f\" y=\"63\" font-size=\"11\" fill=\"#333\">%s</text>\n",
                  lx + 560, fill(k), lx + 576, std::string(planner::to_string(k)).c_str());
    o += buf;
    lx += 60;
  }
  // Busy table.
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\" fill=\"#222\" xml:space=\"preserve\">stage   busy "
                "predicted ms   busy measured ms   difference</text>\n",
                left, table_top);
  o += buf;
  double ty = table_top + 20;
  for (const auto& [s, unused] : stages) {
    const double p = pb.count(s) ? pb.at(s) / 1e6 : 0, m = mb.count(s) ? mb.at(s) / 1e6 : 0;
    std::snprintf(buf, sizeof buf,
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333\" xml:space=\"preserve\">%-7d %18.3f "
                  "%18.3f   %+.1f%%</text>\n",
                  left, ty, s, p, m, m > 0 ? 100.0 * (p / m - 1) : 0.0);
    o += buf;
    ty += 20;
  }
  o += "</svg>\n";
  return o;
}

}  // namespace pw::sim
