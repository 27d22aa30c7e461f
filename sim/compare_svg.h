// Predicted and measured timelines in one picture (`run --compare --svg F`): for each device a
// row pair — predicted above, measured below — on one time axis in ms, compute ops coloured by
// kind (F, B, W, BW, step) with their micro-batch numbers where they fit, and under it a table
// per stage: busy time per iteration predicted vs measured and the difference.
//
// Both traces must hold one steady-state iteration each, starting at time 0 (use
// steady_iteration() to cut one out of a measured run). Transfers are not drawn. Pure.
#pragma once

#include <string>

#include "sim/trace.h"

namespace pw::sim {

// Iteration `iteration` of `t` (its compute events and memory samples), shifted to start at 0.
Trace steady_iteration(const Trace& t, int iteration);

std::string compare_svg(const Trace& predicted, const Trace& measured, const std::string& title);

}  // namespace pw::sim
