// Generic SVG charts for reports: a line chart (linear or log axes, one polyline per series
// with markers, styled by colour, dash and marker shape, infeasible points marked, legend) and a bar chart (grouped or
// stacked bars per category, legend).
//
// Output is a self-contained, well-formed SVG 1.1 document (UTF-8; every text node and
// attribute value is XML-escaped). Sizes are in SVG user units (pixels); labels use a
// sans-serif font. Rendering is a pure function of its input: thread-safe, deterministic.
//
// Input contract (violations throw pw::InputError naming the chart title and the series):
// - LineSeries: x.size() == y.size(); values finite; on a log axis every value > 0.
// - BarChart: each series has one value per category; values finite and >= 0 when stacked.
// An empty chart (no series or no points) renders axes and a "no data" note.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pw::whatif {

struct AxisTick {
  double value = 0;
  std::string label;
};

// "Nice" ticks (steps of 1, 2 or 5 times a power of ten) covering [lo, hi]; the first tick is
// <= lo and the last >= hi. lo == hi widens the range around the value. About `target` ticks.
std::vector<AxisTick> linear_ticks(double lo, double hi, int target = 6);
// Ticks for a log10 axis covering [lo, hi] (both > 0): every power of ten from
// 10^floor(log10 lo) to 10^ceil(log10 hi); when hi/lo spans at most 2 decades, also the 2x
// and 5x multiples inside each decade.
std::vector<AxisTick> log_ticks(double lo, double hi);
// Compact tick label: integers up to 9999 as is, larger magnitudes with SI suffixes
// (1.5k, 20M, 3G, 1T), small values with up to 3 significant digits.
std::string format_tick(double v);
std::string xml_escape(std::string_view s);

// Styling lets a chart encode two dimensions: colour one (e.g. schedule), dash another (e.g. K).
// Later colour groups are drawn with thinner lines and smaller markers of another shape on top
// of earlier ones, so equal series stay visible (a thin line inside a thick one).
struct LineSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
  bool dashed = false;  // shorthand for dash = 1 when dash < 0
  int color = -1;       // palette index (Tableau 10); -1: the series' index
  int dash = -1;        // 0 solid, 1 dashed, 2 dotted, 3 dash-dot; -1: dashed ? 1 : 0
  int marker = -1;      // 0 circle, 1 square, 2 triangle, 3 diamond, 4 triangle down; -1: the colour
  // x values where this series has no feasible point: drawn as an 'x' on the x axis (class
  // "infeasible", stacked upwards when several series share an x), with a legend note.
  std::vector<double> infeasible_x;
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  // When non-empty, these replace the automatic x ticks, and the x axis spans exactly the data
  // and these ticks (4% padding) instead of whole tick steps / decades.
  std::vector<double> x_ticks;
  std::vector<LineSeries> series;
  int width = 860;
  int height = 520;
};

struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category
  std::string color;           // "#rrggbb"; empty = the palette colour of the series' index
};

struct BarChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  bool stacked = false;  // stacked: one bar per category; grouped: one bar per series
  int width = 860;
  int height = 520;
};

std::string render_line_chart_svg(const LineChart& chart);
std::string render_bar_chart_svg(const BarChart& chart);

// Several charts stacked vertically in one SVG document (each keeps its own size).
std::string stack_svgs_vertically(const std::vector<std::string>& svgs);

}  // namespace pw::whatif
