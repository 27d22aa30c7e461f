#include "sim/timeline_svg.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

#include "sim/timeline_draw.h"

namespace pw::sim {

namespace {

struct IterSpan {
  int64_t lo = std::numeric_limits<int64_t>::max();
  int64_t hi = std::numeric_limits<int64_t>::min();
};

// Compute-event extent of every iteration, by iteration number.
std::map<int, IterSpan> iteration_spans(const Trace& t) {
  std::map<int, IterSpan> it;
  for (const TraceEvent& e : t.events) {
    if (e.is_transfer) continue;
    IterSpan& s = it[e.iteration];
    s.lo = std::min(s.lo, e.start_ns);
    s.hi = std::max(s.hi, e.end_ns);
  }
  return it;
}

std::string range_text(int a, int b) {
  return a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b);
}

}  // namespace

int detect_warmup_iterations(const Trace& t) {
  if (t.source != "measured") return 0;
  const auto spans = iteration_spans(t);
  if (spans.size() < 2) return 0;
  std::vector<int64_t> len;
  for (const auto& [k, s] : spans) len.push_back(s.hi - s.lo);
  std::vector<int64_t> later(len.begin() + static_cast<std::ptrdiff_t>(len.size() / 2), len.end());
  std::sort(later.begin(), later.end());
  const double median = static_cast<double>(later[later.size() / 2]);
  size_t warm = 1;  // the first step is cold (allocation, kernel creation)
  while (warm + 1 < len.size() && static_cast<double>(len[warm]) > 1.25 * median) ++warm;
  return static_cast<int>(warm);
}

std::string timeline_svg(const Trace& t, const Report& r, const std::string& title, const TimelineOptions& opt) {
  using draw::xml_escape;
  // Which iterations are drawn.
  const auto spans = iteration_spans(t);
  std::vector<int> iters;
  for (const auto& [k, s] : spans) iters.push_back(k);
  int warm = 0, hidden = 0;
  if (t.source == "measured" && iters.size() > 1) {
    warm = opt.warmup_iterations >= 0 ? opt.warmup_iterations : detect_warmup_iterations(t);
    warm = std::min<int>(warm, static_cast<int>(iters.size()) - 1);
    const int steady = static_cast<int>(iters.size()) - warm;
    hidden = warm + std::max(0, steady - std::max(1, opt.max_iterations));
  }
  const std::vector<int> shown(iters.begin() + hidden, iters.end());
  int64_t t0 = 0, end = 1;
  if (!shown.empty()) {
    t0 = hidden > 0 ? spans.at(shown.front()).lo : std::min<int64_t>(0, spans.at(shown.front()).lo);
    for (int k : shown) end = std::max(end, spans.at(k).hi - t0);
  }
  Trace d;  // the drawn part, shifted to start at 0
  d.source = t.source;
  d.num_devices = t.num_devices;
  for (TraceEvent e : t.events) {
    if (hidden > 0 && e.iteration < shown.front()) continue;
    e.start_ns -= t0;
    e.end_ns -= t0;
    if (e.is_transfer) end = std::max(end, e.end_ns);
    d.events.push_back(e);
  }
  const bool has_transfers = std::any_of(d.events.begin(), d.events.end(), [](const TraceEvent& e) {
    return e.is_transfer && e.dst_device >= 0 && e.dst_device != e.device;
  });

  const int rows = std::max(1, t.num_devices);
  const double row_h = rows > 32 ? 12 : 28, gap = rows > 32 ? 6 : (has_transfers ? 12 : 6);
  const double left = 80, right = 64, top = 78, width = 1200;
  const double band_w = hidden > 0 ? 70 : 0;
  const draw::XMap xm{left + band_w, width - left - right - band_w, end};
  const bool occupancy = draw::boxes_too_thin(d, xm);
  const double axis_y = top + rows * (row_h + gap) + 4;
  const double height = axis_y + (hidden > 0 ? 88 : 70);
  auto row_y = [&](int dev) { return top + dev * (row_h + gap); };

  std::string o;
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "font-family=\"Helvetica, Arial, sans-serif\">\n"
                "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
                width, height, width, height);
  o += buf;
  char memory[64] = "";
  if (r.peak_memory_bytes > 0)
    std::snprintf(memory, sizeof memory, "  |  peak memory %.1f MiB",
                  static_cast<double>(r.peak_memory_bytes) / (1 << 20));
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.0f\" y=\"26\" font-size=\"17\" font-weight=\"bold\" fill=\"#222\">%s</text>\n"
                "<text x=\"%.0f\" y=\"46\" font-size=\"13\" fill=\"#444\">schedule bubble %s  |  makespan %.3f ms  |  "
                "cost %.3f ms (device %d)%s</text>\n",
                left, xml_escape(title).c_str(), left, figures_text(r, "  |  ").c_str(), r.makespan_ns / 1e6,
                r.cost_ns / 1e6, r.bottleneck_device, memory);
  o += buf;
  for (int dev = 0; dev < rows; ++dev) {
    const double y = row_y(dev);
    std::snprintf(
        buf, sizeof buf,
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f3f3\"/>\n"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"end\" fill=\"#333\">device %d</text>\n"
        "<text class=\"busy-share\" x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" fill=\"#333\">%.0f%% busy</text>\n",
        xm.left, y, xm.width, row_h, left - 8, y + row_h / 2 + 4, rows > 32 ? 9 : 12, dev, xm.left + xm.width + 6,
        y + row_h / 2 + 4, rows > 32 ? 9 : 11, 100.0 * draw::busy_share(d, dev, end));
    o += buf;
    draw::draw_row(o, d, dev, y, row_h, xm, occupancy, rows);
  }
  std::vector<double> tops;
  for (int dev = 0; dev < rows; ++dev) tops.push_back(row_y(dev));
  draw::draw_transfers(o, d, xm, row_h, tops, occupancy, gap);
  // Iteration starts; labels only where the previous one leaves room.
  double last_label = -1e9;
  for (int k : shown) {
    const double x = xm.x(spans.at(k).lo - t0);
    const bool room = x - last_label > 70;
    draw::draw_iteration_mark(o, x, top, axis_y - 4, room ? "iteration " + std::to_string(k) : "");
    if (room) last_label = x;
  }
  if (hidden > 0) {
    const int first = iters.front(), last_hidden = iters[static_cast<size_t>(hidden) - 1];
    const int64_t hidden_ns = spans.at(shown.front()).lo - spans.at(first).lo;
    std::snprintf(buf, sizeof buf,
                  "<rect class=\"warmup\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#d9d9d9\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#333\">not drawn</text>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#333\">it. %s</text>\n",
                  left, top, band_w - 6, axis_y - 4 - top, left + (band_w - 6) / 2, top + 14, left + (band_w - 6) / 2,
                  top + 28, range_text(first, last_hidden).c_str());
    o += buf;
    std::string note = "not drawn: iterations " + range_text(first, last_hidden);
    std::snprintf(buf, sizeof buf, " (%.3f ms): warm-up %s", hidden_ns / 1e6,
                  warm > 0 ? range_text(first, iters[static_cast<size_t>(warm) - 1]).c_str() : "none");
    note += buf;
    if (hidden > warm) note += ", earlier steady-state " + range_text(iters[static_cast<size_t>(warm)], last_hidden);
    note += "; time is measured from the start of iteration " + std::to_string(shown.front());
    std::snprintf(buf, sizeof buf,
                  "<text class=\"warmup-note\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#444\">%s</text>\n", left,
                  axis_y + 78, xml_escape(note).c_str());
    o += buf;
  }
  draw::draw_time_axis(o, xm, axis_y, hidden > 0 ? "time since iteration " + std::to_string(shown.front()) : "time");
  draw::draw_legend(o, {&d}, left, axis_y + 56, has_transfers, occupancy);
  if (occupancy) {
    std::snprintf(buf, sizeof buf,
                  "<text x=\"%.1f\" y=\"61\" font-size=\"12\" fill=\"#444\">ops narrower than 2 px: each row shows "
                  "busy time per op kind (merged spans, one band per kind)</text>\n",
                  left);
    o += buf;
  }
  o += "</svg>\n";
  return o;
}

}  // namespace pw::sim
