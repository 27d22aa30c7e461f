#include "whatif/chart_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "models/error.h"

namespace pw::whatif {
namespace {

// Tableau 10: distinguishable, colour-blind friendlier than the default web colours.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr int kPaletteSize = 10;
constexpr const char* kFont = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";

std::string color(size_t i) { return kPalette[i % kPaletteSize]; }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;        // data-space range shown
  double px_lo = 0, px_hi = 1;  // pixel positions of lo and hi
  double map(double v) const {
    double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return px_lo + t * (px_hi - px_lo);
  }
};

// Plot area margins: left for the y tick labels and title, right for the legend.
struct Frame {
  double left, top, right, bottom;  // pixel coordinates of the plot area
};

void header(std::ostringstream& o, int w, int h) {
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << w << "\" height=\"" << h
    << "\" viewBox=\"0 0 " << w << ' ' << h << "\">\n"
    << "<rect x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h << "\" fill=\"#ffffff\"/>\n";
}

void text(std::ostringstream& o, double x, double y, std::string_view s, int size, const char* anchor = "middle",
          const char* extra = "") {
  o << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << size << "\" " << kFont << " text-anchor=\""
    << anchor << "\" fill=\"#222222\"" << extra << '>' << xml_escape(s) << "</text>\n";
}

void titles(std::ostringstream& o, const Frame& f, int w, std::string_view title, std::string_view x_label,
            std::string_view y_label) {
  // Bold 18 px sans-serif averages about 10.5 px per character: long titles shrink, then wrap.
  const double fits18 = (w - 20) / 10.5;
  if (title.size() <= fits18) {
    text(o, w / 2.0, 28, title, 18, "middle", " font-weight=\"bold\"");
  } else if (title.size() <= fits18 * 18 / 14) {
    text(o, w / 2.0, 28, title, 14, "middle", " font-weight=\"bold\"");
  } else {
    size_t cut = title.rfind(' ', title.size() / 2 + 8);
    if (cut == std::string_view::npos || cut == 0) cut = title.size() / 2;
    text(o, w / 2.0, 20, title.substr(0, cut), 14, "middle", " font-weight=\"bold\"");
    text(o, w / 2.0, 38, title.substr(cut + (title[cut] == ' ' ? 1 : 0)), 14, "middle", " font-weight=\"bold\"");
  }
  text(o, (f.left + f.right) / 2, f.bottom + 48, x_label, 14);
  double cy = (f.top + f.bottom) / 2;
  o << "<text x=\"22\" y=\"" << num(cy) << "\" font-size=\"14\" " << kFont
    << " text-anchor=\"middle\" fill=\"#222222\" transform=\"rotate(-90 22 " << num(cy) << ")\">" << xml_escape(y_label)
    << "</text>\n";
}

void y_grid(std::ostringstream& o, const Frame& f, const Axis& ay, const std::vector<AxisTick>& ticks) {
  for (const AxisTick& t : ticks) {
    if (t.value < ay.lo * (1 - 1e-9) - 1e-300 || t.value > ay.hi * (1 + 1e-9) + 1e-300) continue;
    double y = ay.map(t.value);
    o << "<line x1=\"" << num(f.left) << "\" y1=\"" << num(y) << "\" x2=\"" << num(f.right) << "\" y2=\"" << num(y)
      << "\" stroke=\"#dddddd\" stroke-width=\"1\"/>\n";
    text(o, f.left - 8, y + 4, t.label, 12, "end");
  }
}

void frame_box(std::ostringstream& o, const Frame& f) {
  o << "<rect x=\"" << num(f.left) << "\" y=\"" << num(f.top) << "\" width=\"" << num(f.right - f.left)
    << "\" height=\"" << num(f.bottom - f.top) << "\" fill=\"none\" stroke=\"#444444\" stroke-width=\"1\"/>\n";
}

const char* dash_array(int dash) {
  switch (dash % 4) {
    case 1: return " stroke-dasharray=\"7 4\"";
    case 2: return " stroke-dasharray=\"2 3\"";
    case 3: return " stroke-dasharray=\"9 3 2 3\"";
    default: return "";
  }
}

struct Style {
  std::string color;
  const char* dash;
  int marker;
  double width, r;
};

Style style_of(const LineSeries& s, size_t index) {
  const int c = s.color >= 0 ? s.color : static_cast<int>(index);
  const int d = s.dash >= 0 ? s.dash : (s.dashed ? 1 : 0);
  const int m = s.marker >= 0 ? s.marker : c;
  const int rank = c % kPaletteSize;
  return {color(static_cast<size_t>(c)), dash_array(d), m % 5, std::max(1.5, 7.0 - 2.2 * rank),
          std::max(2.5, 7.5 - 2.0 * rank)};
}

void marker(std::ostringstream& o, double x, double y, const Style& st, const std::string& title) {
  const double r = st.r;
  switch (st.marker) {
    case 1:
      o << "<rect x=\"" << num(x - r) << "\" y=\"" << num(y - r) << "\" width=\"" << num(2 * r) << "\" height=\""
        << num(2 * r) << "\"";
      break;
    case 2:
      o << "<polygon points=\"" << num(x) << ',' << num(y - 1.2 * r) << ' ' << num(x - 1.1 * r) << ',' << num(y + r)
        << ' ' << num(x + 1.1 * r) << ',' << num(y + r) << "\"";
      break;
    case 3:
      o << "<polygon points=\"" << num(x) << ',' << num(y - 1.3 * r) << ' ' << num(x + 1.3 * r) << ',' << num(y) << ' '
        << num(x) << ',' << num(y + 1.3 * r) << ' ' << num(x - 1.3 * r) << ',' << num(y) << "\"";
      break;
    case 4:
      o << "<polygon points=\"" << num(x) << ',' << num(y + 1.2 * r) << ' ' << num(x - 1.1 * r) << ',' << num(y - r)
        << ' ' << num(x + 1.1 * r) << ',' << num(y - r) << "\"";
      break;
    default: o << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"" << num(r) << "\"";
  }
  o << " class=\"marker\" fill=\"" << st.color << "\" stroke=\"#ffffff\" stroke-width=\"0.8\">";
  if (!title.empty()) o << "<title>" << xml_escape(title) << "</title>";
  o << (st.marker == 0 ? "</circle>\n" : st.marker == 1 ? "</rect>\n" : "</polygon>\n");
}

void cross(std::ostringstream& o, double x, double y, const std::string& col, const std::string& title,
           const char* cls = "infeasible") {
  o << "<g class=\"" << cls << "\" stroke=\"" << col << "\" stroke-width=\"2\"><title>" << xml_escape(title)
    << "</title><line x1=\"" << num(x - 4) << "\" y1=\"" << num(y - 4) << "\" x2=\"" << num(x + 4) << "\" y2=\""
    << num(y + 4) << "\"/><line x1=\"" << num(x - 4) << "\" y1=\"" << num(y + 4) << "\" x2=\"" << num(x + 4)
    << "\" y2=\"" << num(y - 4) << "\"/></g>\n";
}

// Line legend: one entry per series with its colour, dash and marker, and an 'x' entry when
// any point is infeasible.
void line_legend(std::ostringstream& o, const Frame& f, const std::vector<LineSeries>& series, bool any_infeasible) {
  double x = f.right + 16, y = f.top + 8;
  for (size_t i = 0; i < series.size(); ++i, y += 22) {
    const Style st = style_of(series[i], i);
    o << "<line x1=\"" << num(x) << "\" y1=\"" << num(y) << "\" x2=\"" << num(x + 24) << "\" y2=\"" << num(y)
      << "\" stroke=\"" << st.color << "\" stroke-width=\"" << num(st.width) << "\"" << st.dash << "/>\n";
    marker(o, x + 12, y, st, "");
    text(o, x + 32, y + 4, series[i].name, 12, "start");
  }
  if (any_infeasible) {
    cross(o, x + 12, y, "#444444", "infeasible", "infeasible-legend");
    text(o, x + 32, y + 4, "infeasible (on the x axis)", 12, "start");
  }
}

// Legend entries in the right margin, one per row, as boxes.
void legend(std::ostringstream& o, const Frame& f, const std::vector<std::string>& names,
            const std::vector<std::string>& colors = {}) {
  double x = f.right + 16, y = f.top + 8;
  for (size_t i = 0; i < names.size(); ++i, y += 22) {
    o << "<rect x=\"" << num(x) << "\" y=\"" << num(y - 7) << "\" width=\"24\" height=\"14\" fill=\""
      << (i < colors.size() && !colors[i].empty() ? xml_escape(colors[i]) : color(i)) << "\"/>\n";
    text(o, x + 32, y + 4, names[i], 12, "start");
  }
}

// Right edge of the plot area: room for the legend's longest name (12 px text, ~7 px/char),
// but the plot keeps at least 55% of the width.
double plot_right(int width, const std::vector<std::string>& names) {
  size_t longest = 0;
  for (const std::string& n : names) longest = std::max(longest, n.size());
  double legend = std::max(120.0, 60.0 + 7.0 * static_cast<double>(longest));
  return std::max(width * 0.55, width - legend);
}

void check_finite(double v, const std::string& title, const std::string& series, bool positive) {
  if (!std::isfinite(v)) throw InputError("chart \"" + title + "\": series \"" + series + "\" has a non-finite value");
  if (positive && v <= 0)
    throw InputError("chart \"" + title + "\": series \"" + series + "\" has a value <= 0 on a log axis (" +
                     format_tick(v) + ")");
}

std::string closing() { return "</svg>\n"; }

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab/newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string format_tick(double v) {
  if (v == 0) return "0";
  double a = std::fabs(v);
  char buf[32];
  if (a >= 1e4) {
    static const char* suffix[] = {"k", "M", "G", "T", "P", "E"};
    int k = 0;
    double s = a / 1e3;
    while (s >= 1e3 && k < 5) s /= 1e3, ++k;
    std::snprintf(buf, sizeof buf, "%.3g%s", v < 0 ? -s : s, suffix[k]);
    return buf;
  }
  if (a >= 1 && std::fabs(v - std::round(v)) < 1e-9) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::vector<AxisTick> linear_ticks(double lo, double hi, int target) {
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) {
    double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  target = std::max(target, 2);
  double raw = (hi - lo) / target;
  double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  double first = std::floor(lo / step + 1e-9) * step;
  double last = std::ceil(hi / step - 1e-9) * step;
  std::vector<AxisTick> ticks;
  for (double v = first; v <= last + step * 1e-6; v += step) {
    double r = std::fabs(v) < step * 1e-9 ? 0.0 : v;
    ticks.push_back({r, format_tick(r)});
  }
  return ticks;
}

std::vector<AxisTick> log_ticks(double lo, double hi) {
  PW_CHECK(lo > 0 && hi > 0, "log_ticks needs a positive range");
  if (lo > hi) std::swap(lo, hi);
  int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (e1 == e0) ++e1;
  bool minor = std::log10(hi / lo) < 2.0 + 1e-9;
  std::vector<AxisTick> ticks;
  for (int e = e0; e <= e1; ++e) {
    double p = std::pow(10.0, e);
    ticks.push_back({p, format_tick(p)});
    if (minor && e < e1)
      for (double m : {2.0, 5.0}) ticks.push_back({m * p, format_tick(m * p)});
  }
  return ticks;
}

std::string render_line_chart_svg(const LineChart& c) {
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  bool any_infeasible = false, no_points = true;
  for (const LineSeries& s : c.series) no_points = no_points && s.x.empty();
  for (const LineSeries& s : c.series) {
    if (s.x.size() != s.y.size())
      throw InputError("chart \"" + c.title + "\": series \"" + s.name + "\" has " + std::to_string(s.x.size()) +
                       " x values but " + std::to_string(s.y.size()) + " y values");
    for (size_t i = 0; i < s.x.size(); ++i) {
      check_finite(s.x[i], c.title, s.name, c.log_x);
      check_finite(s.y[i], c.title, s.name, c.log_y);
      xmin = std::min(xmin, s.x[i]), xmax = std::max(xmax, s.x[i]);
      ymin = std::min(ymin, s.y[i]), ymax = std::max(ymax, s.y[i]);
    }
    for (double v : s.infeasible_x) {
      check_finite(v, c.title, s.name, c.log_x);
      any_infeasible = true;
    }
  }
  bool empty = !(xmin <= xmax);
  if (any_infeasible) {
    // Infeasible x values widen the x range (the y range stays the data's).
    double lo = empty ? std::numeric_limits<double>::infinity() : xmin, hi = empty ? -lo : xmax;
    for (const LineSeries& s : c.series)
      for (double v : s.infeasible_x) lo = std::min(lo, v), hi = std::max(hi, v);
    if (empty) ymin = 1, ymax = 10;
    xmin = lo, xmax = hi, empty = false;
  }
  if (empty) xmin = ymin = 1, xmax = ymax = 10;

  std::vector<std::string> legend_names;
  for (const LineSeries& s : c.series) legend_names.push_back(s.name);
  if (any_infeasible) legend_names.push_back("infeasible (on the x axis)");
  Frame f{90, 50, plot_right(c.width, legend_names), static_cast<double>(c.height) - 70};
  std::vector<AxisTick> xt = c.log_x ? log_ticks(xmin, xmax) : linear_ticks(xmin, xmax);
  std::vector<AxisTick> yt = c.log_y ? log_ticks(ymin, ymax) : linear_ticks(std::min(0.0, ymin), ymax);
  Axis ax{c.log_x, xt.front().value, xt.back().value, f.left, f.right};
  Axis ay{c.log_y, yt.front().value, yt.back().value, f.bottom, f.top};
  if (!c.x_ticks.empty() && !empty) {
    // Explicit ticks: the axis spans the data and those ticks, with 4% padding each side.
    double lo = xmin, hi = xmax;
    for (double v : c.x_ticks)
      if (!c.log_x || v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    if (c.log_x) {
      double pad = std::max(0.04 * std::log10(hi / lo), 0.02);
      ax.lo = lo / std::pow(10, pad), ax.hi = hi * std::pow(10, pad);
    } else {
      double pad = std::max(0.04 * (hi - lo), 1e-9);
      ax.lo = lo - pad, ax.hi = hi + pad;
    }
    xt.clear();
    for (double v : c.x_ticks)
      if (v >= ax.lo && v <= ax.hi && (!c.log_x || v > 0)) xt.push_back({v, format_tick(v)});
  }

  std::ostringstream o;
  header(o, c.width, c.height);
  titles(o, f, c.width, c.title, c.x_label, c.y_label);
  y_grid(o, f, ay, yt);
  for (const AxisTick& t : xt) {
    double x = ax.map(t.value);
    o << "<line x1=\"" << num(x) << "\" y1=\"" << num(f.top) << "\" x2=\"" << num(x) << "\" y2=\"" << num(f.bottom)
      << "\" stroke=\"#eeeeee\" stroke-width=\"1\"/>\n";
    text(o, x, f.bottom + 20, t.label, 12);
  }
  frame_box(o, f);
  if (empty || no_points) text(o, (f.left + f.right) / 2, (f.top + f.bottom) / 2, "no data", 16);

  for (size_t si = 0; si < c.series.size(); ++si) {
    const LineSeries& s = c.series[si];
    if (s.x.empty()) continue;
    const Style st = style_of(s, si);
    o << "<polyline fill=\"none\" stroke=\"" << st.color << "\" stroke-width=\"" << num(st.width) << "\"" << st.dash
      << " stroke-linejoin=\"round\" points=\"";
    for (size_t i = 0; i < s.x.size(); ++i) o << (i ? " " : "") << num(ax.map(s.x[i])) << ',' << num(ay.map(s.y[i]));
    o << "\"/>\n";
  }
  // Markers after every line, so no line covers a marker.
  for (size_t si = 0; si < c.series.size(); ++si) {
    const LineSeries& s = c.series[si];
    const Style st = style_of(s, si);
    for (size_t i = 0; i < s.x.size(); ++i)
      marker(o, ax.map(s.x[i]), ay.map(s.y[i]), st,
             s.name + ": (" + format_tick(s.x[i]) + ", " + format_tick(s.y[i]) + ")");
  }
  std::vector<std::pair<double, int>> stacked;  // x and how many marks it holds
  for (size_t si = 0; si < c.series.size(); ++si) {
    const LineSeries& s = c.series[si];
    for (double v : s.infeasible_x) {
      int k = 0;
      for (auto& [sx, n] : stacked)
        if (sx == v) k = n++;
      if (k == 0) stacked.emplace_back(v, 1);
      cross(o, ax.map(v), f.bottom - 7 - 10.0 * k, style_of(s, si).color, s.name + ": infeasible at " + format_tick(v));
    }
  }
  line_legend(o, f, c.series, any_infeasible);
  o << closing();
  return o.str();
}

std::string render_bar_chart_svg(const BarChart& c) {
  size_t nc = c.categories.size(), ns = c.series.size();
  double ymax = 0, ymin = 0;
  std::vector<double> stack_top(nc, 0.0);
  for (const BarSeries& s : c.series) {
    if (s.values.size() != nc)
      throw InputError("chart \"" + c.title + "\": series \"" + s.name + "\" has " + std::to_string(s.values.size()) +
                       " values for " + std::to_string(nc) + " categories");
    for (size_t i = 0; i < nc; ++i) {
      check_finite(s.values[i], c.title, s.name, false);
      if (c.stacked && s.values[i] < 0)
        throw InputError("chart \"" + c.title + "\": series \"" + s.name + "\" has a negative value in a stacked bar");
      stack_top[i] += s.values[i];
      ymax = std::max(ymax, c.stacked ? stack_top[i] : s.values[i]);
      ymin = std::min(ymin, s.values[i]);
    }
  }
  bool empty = nc == 0 || ns == 0;
  if (ymax == ymin) ymax = ymin + 1;

  std::vector<std::string> legend_names;
  for (const BarSeries& s : c.series) legend_names.push_back(s.name);
  Frame f{90, 50, plot_right(c.width, legend_names), static_cast<double>(c.height) - 70};
  std::vector<AxisTick> yt = linear_ticks(ymin, ymax);
  Axis ay{false, yt.front().value, yt.back().value, f.bottom, f.top};

  std::ostringstream o;
  header(o, c.width, c.height);
  titles(o, f, c.width, c.title, c.x_label, c.y_label);
  y_grid(o, f, ay, yt);
  if (empty) text(o, (f.left + f.right) / 2, (f.top + f.bottom) / 2, "no data", 16);

  double slot = nc ? (f.right - f.left) / nc : 0;
  double group = slot * 0.8;
  double bar = c.stacked || ns == 0 ? group : group / ns;
  int label_size = slot < 40 ? 10 : 12;
  // Category labels: every `label_step`-th one when they would overlap (~6 px per character).
  size_t longest = 1;
  for (const std::string& cat : c.categories) longest = std::max(longest, cat.size());
  const double label_px = 6.0 * static_cast<double>(longest) + 6;
  const size_t label_step = slot > 0 ? std::max<size_t>(1, static_cast<size_t>(std::ceil(label_px / slot))) : 1;
  for (size_t i = 0; i < nc; ++i) {
    double x0 = f.left + slot * i + (slot - group) / 2;
    double base = 0;
    for (size_t s = 0; s < ns; ++s) {
      double v = c.series[s].values[i];
      double y_lo = c.stacked ? base : 0, y_hi = c.stacked ? base + v : v;
      if (y_lo > y_hi) std::swap(y_lo, y_hi);
      double top = ay.map(y_hi), bottom = ay.map(y_lo);
      double x = c.stacked ? x0 : x0 + bar * s;
      o << "<rect x=\"" << num(x) << "\" y=\"" << num(top) << "\" width=\"" << num(std::max(bar - 1, 1.0))
        << "\" height=\"" << num(bottom - top) << "\" fill=\""
        << (c.series[s].color.empty() ? color(s) : xml_escape(c.series[s].color)) << "\"><title>"
        << xml_escape(c.categories[i]) << ", " << xml_escape(c.series[s].name) << ": " << format_tick(v)
        << "</title></rect>\n";
      if (c.stacked) base += v;
    }
    if (i % label_step == 0) text(o, f.left + slot * (i + 0.5), f.bottom + 20, c.categories[i], label_size);
  }
  frame_box(o, f);
  std::vector<std::string> names, colors;
  for (const BarSeries& s : c.series) names.push_back(s.name), colors.push_back(s.color);
  legend(o, f, names, colors);
  o << closing();
  return o.str();
}

std::string stack_svgs_vertically(const std::vector<std::string>& svgs) {
  auto attr = [](const std::string& s, const std::string& name) {
    size_t p = s.find(" " + name + "=\"");
    PW_CHECK(p != std::string::npos, "stacked SVG lacks " + name);
    return std::stod(s.substr(p + name.size() + 3));
  };
  double width = 0, height = 0;
  std::ostringstream body;
  for (const std::string& s : svgs) {
    size_t start = s.find("<svg");
    PW_CHECK(start != std::string::npos, "not an SVG document");
    std::string doc = s.substr(start);
    double w = attr(doc, "width"), h = attr(doc, "height");
    // Nested <svg> elements position each chart; x/y attributes go right after the tag name.
    body << "<svg x=\"0\" y=\"" << num(height) << '"' << doc.substr(4);
    width = std::max(width, w);
    height += h;
  }
  std::ostringstream o;
  header(o, static_cast<int>(std::ceil(width)), static_cast<int>(std::ceil(height)));
  o << body.str() << closing();
  return o.str();
}

}  // namespace pw::whatif
