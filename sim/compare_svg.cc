#include "sim/compare_svg.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

#include "sim/timeline_draw.h"

namespace pw::sim {

namespace {

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
    if (ev.iteration == iteration && ev.start_ns >= lo) {
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
  const int64_t span = std::max<int64_t>(1, std::max(end_of(predicted), end_of(measured)));
  const double left = 150, width = 1000, row = 26, gap = 10, block_gap = 34, top = 100;
  const auto pb = busy(predicted), mb = busy(measured);
  std::map<int, int> stages;
  for (const auto& [s, v] : pb) stages[s] = 1;
  for (const auto& [s, v] : mb) stages[s] = 1;
  const double block = devices * (row + gap);
  const double axis_y = top + 2 * block + block_gap + 4;
  const double table_top = axis_y + 84;
  const double height = table_top + 30 + 20 * static_cast<double>(stages.size() + 1) + 20;
  const draw::XMap xm{left, width, span};
  // One decision for both traces, so the two halves of a row pair are drawn alike.
  const bool occupancy = draw::boxes_too_thin(predicted, xm) || draw::boxes_too_thin(measured, xm);
  std::string o;
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n"
                "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
                "<text x=\"%.0f\" y=\"26\" font-size=\"17\" font-weight=\"bold\" fill=\"#222\">%s</text>\n"
                "<text x=\"%.0f\" y=\"46\" font-size=\"13\" fill=\"#444\">one steady-state iteration each, from its "
                "first op, on one time axis: predicted %.3f ms, measured %.3f ms (prediction %+.1f%%)</text>\n",
                left + width + 70, height, left, draw::xml_escape(title).c_str(), left, end_of(predicted) / 1e6,
                end_of(measured) / 1e6,
                end_of(measured) > 0 ? 100.0 * (double(end_of(predicted)) / double(end_of(measured)) - 1) : 0.0);
  o += buf;
  // Predicted rows as one block, measured rows as another below it, so transfers stay inside a block.
  auto row_y = [&](int d, int which) { return top + which * (block + block_gap) + d * (row + gap); };
  for (int which = 0; which < 2; ++which) {
    const Trace& t = which == 0 ? predicted : measured;
    for (int d = 0; d < devices; ++d) {
      const double y = row_y(d, which);
      std::snprintf(
          buf, sizeof buf,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n"
          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\" fill=\"#333\">worker %d %s</text>\n"
          "<text class=\"busy-share\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#333\">%.0f%% busy</text>\n",
          left, y, width, row - 4, which == 0 ? "#f3f6fb" : "#f7f3ef", left - 8, y + row / 2 + 2, d,
          which == 0 ? "predicted" : "measured", left + width + 6, y + row / 2 + 2,
          100.0 * draw::busy_share(t, d, span));
      o += buf;
      draw::draw_row(o, t, d, y + 1, row - 6, xm, occupancy, 0);
    }
    std::snprintf(buf, sizeof buf,
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\" fill=\"#222\">%s</text>\n",
                  left + 5, row_y(0, which) - 8, which == 0 ? "predicted" : "measured");
    o += buf;
    // Transfers between the same kind of rows (predicted to predicted, measured to measured).
    std::vector<double> tops;
    for (int d = 0; d < devices; ++d) tops.push_back(row_y(d, which) + 1);
    draw::draw_transfers(o, t, xm, row - 6, tops, occupancy, gap + 4);
  }
  draw::draw_iteration_mark(o, left, top - 14, axis_y - 4, "");
  draw::draw_time_axis(o, xm, axis_y, "time since the iteration's first op");
  draw::draw_legend(o, {&predicted, &measured}, left, 70, true, occupancy);
  // Busy table.
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\" fill=\"#222\" "
                "xml:space=\"preserve\">stage   busy "
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
