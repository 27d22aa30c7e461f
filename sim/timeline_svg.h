// timeline_svg: a standalone SVG timeline of a Trace, one row per device, one colour per op
// kind, readable at any size:
// - the time axis unit follows the span (ns, us, ms, s) with 1/2/5 x 10^k steps, <= 12 ticks;
// - ops are boxes with outlines and micro-batch numbers where they fit; when a quarter of
//   the ops would be thinner than 2 px, each row shows occupancy instead (merged busy spans per op
//   kind, no outlines), so a device's inked share equals its busy share (printed at the right);
// - transfers are thin lines from the sending row at the send to the receiving row at arrival;
// - a dashed line labelled "iteration k" at the start of every drawn iteration;
// - measured traces (source "measured") show steady-state iterations only: warm-up iterations
//   (TimelineOptions, or detected: iteration 0 and leading iterations longer than 1.25x the
//   median of the later half) and steady ones beyond the last `max_iterations` are not drawn;
//   a shaded "not drawn" band at the left and a note below the legend say which and how long.
// The subtitle carries the report's schedule bubble, stage imbalance, idle share, makespan and
// cost. Pure and deterministic.
#pragma once

#include <string>

#include "sim/report.h"
#include "sim/trace.h"

namespace pw::sim {

struct TimelineOptions {
  int warmup_iterations = -1;  // measured traces: leading iterations that are warm-up; -1 detects
  int max_iterations = 4;      // measured traces: at most this many (the last) steady iterations drawn
};

// Leading iterations of a measured trace that are warm-up (see above); 0 for other traces.
int detect_warmup_iterations(const Trace& t);

std::string timeline_svg(const Trace& t, const Report& r, const std::string& title, const TimelineOptions& opt = {});

}  // namespace pw::sim
