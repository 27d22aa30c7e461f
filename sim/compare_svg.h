// Predicted and measured timelines in one picture (`run --compare --svg F`): a block of
// predicted rows (one per device) above a block of measured rows, on one time axis (unit by span, 1/2/5 ticks;
// timeline_draw.h), compute ops coloured by kind with micro-batch numbers where they fit, or
// occupancy when ops would be thinner than 2 px (decided once for both traces), transfers as
// thin lines, the busy share of every row, and under it a table per stage: busy time per
// iteration predicted vs measured and the difference.
//
// Both traces must hold one steady-state iteration each, starting at time 0 (use
// steady_iteration() to cut one out of a measured run). Pure.
#pragma once

#include <string>

#include "sim/trace.h"

namespace pw::sim {

// Iteration `iteration` of `t` (its compute and transfer events and memory samples), shifted
// to start at its first compute op.
Trace steady_iteration(const Trace& t, int iteration);

std::string compare_svg(const Trace& predicted, const Trace& measured, const std::string& title);

}  // namespace pw::sim
