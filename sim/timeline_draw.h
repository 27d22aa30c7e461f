// Drawing pieces shared by the SVG timeline (timeline_svg.h) and the predicted-vs-measured
// picture (compare_svg.h): a time axis whose unit follows the span, op colours, device rows
// drawn as boxes or, when boxes would be thinner than ~2 px, as occupancy, and transfers.
//
// All functions are pure and append SVG elements to a string; every element they emit
// carries a class attribute (op, busy, mb, transfer, tick, iteration) so that pictures can be
// checked structurally. Times are integer nanoseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/trace.h"

namespace pw::sim::draw {

std::string xml_escape(const std::string& s);
const char* op_fill(planner::OpKind k);
const char* op_legend(planner::OpKind k);  // "F forward", "B input grad", ...

// The largest of ns, us, ms, s that the span reaches (at least ns).
struct TimeUnit {
  const char* name = "ns";
  double ns = 1;
};
TimeUnit time_unit_for(int64_t span_ns);

// Ticks from 0 to at least span_ns, step 1, 2 or 5 x 10^k of the unit, at most 12 of them;
// labels are numbers in `unit` with as many decimals as the step needs.
struct TimeTick {
  int64_t ns = 0;
  std::string label;
};
std::vector<TimeTick> time_ticks(int64_t span_ns, const TimeUnit& unit);

// Maps time [0, span_ns] onto [left, left + width] pixels.
struct XMap {
  double left = 0;
  double width = 1;
  int64_t span_ns = 1;
  double x(int64_t t) const { return left + width * static_cast<double>(t) / static_cast<double>(span_ns); }
  double w(int64_t d) const { return width * static_cast<double>(d) / static_cast<double>(span_ns); }
};

// True when at least a quarter of the compute ops of `t` would be drawn narrower than 2 px.
bool boxes_too_thin(const Trace& t, const XMap& xm);

// Merged busy spans [start, end) of a sorted-or-not list of spans (touching spans merge).
std::vector<std::pair<int64_t, int64_t>> merge_spans(std::vector<std::pair<int64_t, int64_t>> spans);

// Busy share of device d over [0, span_ns] (compute events, overlaps counted once).
double busy_share(const Trace& t, int device, int64_t span_ns);

// Device d's compute events in the row [y, y + h). Boxes: one rect per op (class "op") with a
// white outline and its micro-batch number (class "mb") where it fits; `chunk_rows` > 0
// draws odd model chunks (stage / chunk_rows) lighter. Occupancy: per op kind present, one
// sub-band of the row holding that kind's merged busy spans (class "busy"), no outlines.
void draw_row(std::string& o, const Trace& t, int device, double y, double h, const XMap& xm, bool occupancy,
              int chunk_rows);

// Transfers of `t` (sender and receiver rows both in `row_top`, the top of each device's row).
// Lines: a thin line from the sender's row edge at the send start to the receiver's row edge
// at the arrival (class "transfer"). Occupancy (for thin pictures): per directed link, its
// merged busy spans as a strip in the gap next to the sender's row, on the receiver's side —
// the upper half of the gap for downward links, the lower half for upward ones (class
// "transfer-busy"); `gap` is the space between rows.
void draw_transfers(std::string& o, const Trace& t, const XMap& xm, double row_h, const std::vector<double>& row_top,
                    bool occupancy, double gap);

// The axis line at y, ticks and labels (class "tick"), and "time (<unit>)" centred below.
void draw_time_axis(std::string& o, const XMap& xm, double y, const std::string& prefix = "time");

// A dashed vertical line at x from y0 to y1 (class "iteration") labelled `label` above y0.
void draw_iteration_mark(std::string& o, double x, double y0, double y1, const std::string& label);

// One legend entry per compute op kind present in any of `traces`, from (x, y).
void draw_legend(std::string& o, const std::vector<const Trace*>& traces, double x, double y, bool with_transfers,
                 bool transfer_strips = false);

}  // namespace pw::sim::draw
