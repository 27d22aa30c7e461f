// A worker's ops priced as wholes ("everything the runtime spends is in the model").
//
// With PassOptions::order, a profile copy runs its worker's ops: the F, B, W or BW of one
// micro-batch over one stage's layers. The simulator prices such an op as the sum of its
// layers' estimates. A sum of per-layer trimmed means falls short of the op's own trimmed
// mean: each layer's trim drops that layer's slowest samples, which in the op's total are
// only part of a sample (the default gpt's 2-stage 1F1B: F and BW priced 1-2% under the copy's
// own ops, bench/RESULTS.md). So the estimate of an op is taken from the op's totals, and its
// layers' estimates are scaled to add up to it; the split among the layers stays theirs.
#pragma once

#include <vector>

#include "exec/profile/in_context.h"
#include "models/profile.h"

namespace pw::exec {

// For every distinct op range of `order` (kind F, B, W or BW over [begin, end)): the totals of
// the range's layers pass by pass (F: forward; B: backward_input; W: backward_weight; BW: both)
// from `samples` (PassTimes as time_in_context records them: one sample per layer per op,
// pass k of every layer in a range is the same op), their `trim`-trimmed mean
// (models::trimmed_mean_of), and the `times` of the range's layers (F: forward_ns; B:
// backward_input_ns; W: backward_weight_ns; BW: both) scaled by one factor so that they add up
// to it. A range whose layers hold different sample counts, or whose estimates add up to 0, is
// left as it is. Returns how many ranges were rescaled. Pure.
int price_op_totals(std::vector<models::PointTimes>& times, const PassTimes& samples, const std::vector<PassOp>& order,
                    double trim);

}  // namespace pw::exec
