// The pictures of the what-if studies, as SVG documents (whatif/chart_svg.h).
//
// - max-model: parameters vs devices on log-log axes, one line per mode (naive dashed, flat
//   at its single-device value), then a stacked bar per configuration of the fullest device's
//   memory (weights + optimizer, activations) in GiB against the device capacity.
// - throughput: normalized throughput vs micro-batches (log x), one line per (schedule, K),
//   then stacked per-stage memory bars (GiB) of the highest-throughput cell of each schedule.
// - sweep: `metric` vs a numeric x axis (log when all values > 0 and span >= 8x), one line per
//   combination of the other axes (at most 10; more throws InputError naming the count).
// Throughput lines are coloured (and shaped) by schedule and dashed by K; sweep lines coloured by
// the first other axis and dashed by the second. Infeasible rows/cells are left out of the lines
// and marked with an 'x' on the x axis (chart_svg.h). Axes are labelled in words
// (axis_words). Pure functions.
#pragma once

#include <string>
#include <vector>

#include "whatif/max_model.h"
#include "whatif/sweep.h"
#include "whatif/table.h"
#include "whatif/throughput.h"

namespace pw::whatif {

// Words for a result column on an axis ("throughput_samples_per_s" -> "samples per second");
// unknown columns with '_' read as spaces.
std::string axis_words(const std::string& column);

std::string max_model_svg(const std::vector<MaxModelResult>& rows, const std::string& title);
std::string throughput_svg(const std::vector<ThroughputCell>& cells, const std::string& title);
// Checks, before a sweep computes anything, that its chart can be drawn, and returns the x axis:
// `x_axis` or, when empty, "devices" if it is an axis, else the first axis with numeric values.
// Throws InputError naming the flag when x is not a numeric axis or result column, when
// `metric` is not a column, or when the axes other than x make more than 10 lines.
std::string check_sweep_chart(const std::vector<SweepAxis>& axes, const std::vector<std::string>& result_columns,
                              const std::string& x_axis, const std::string& metric);
// `x_axis`: a column of `t` with numeric values; series are keyed by the other `axes` columns.
std::string sweep_svg(const Table& t, const std::vector<std::string>& axes, const std::string& x_axis,
                      const std::string& metric, const std::string& title);

}  // namespace pw::whatif
