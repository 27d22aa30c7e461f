#include "whatif/chart_svg.h"

#include <doctest/doctest.h>

#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "models/error.h"
#include "whatif/charts.h"

using namespace pw::whatif;

namespace {

// Minimal XML 1.0 well-formedness check for the subset the charts emit: one optional
// declaration, elements with quoted attributes, text, and the five predefined entities.
// Returns "" when well-formed, else a description of the first problem.
std::string xml_problem(const std::string& s, std::vector<std::string>* element_names = nullptr) {
  std::vector<std::string> open;
  size_t i = 0;
  if (s.rfind("<?xml", 0) == 0) {
    i = s.find("?>");
    if (i == std::string::npos) return "unterminated declaration";
    i += 2;
  }
  bool seen_root = false;
  auto check_text = [&](size_t from, size_t to) -> std::string {
    for (size_t k = from; k < to; ++k) {
      if (s[k] == '>') return "raw '>' in text at " + std::to_string(k);
      if (s[k] == '&') {
        size_t semi = s.find(';', k);
        if (semi == std::string::npos) return "unterminated entity";
        std::string ent = s.substr(k, semi - k + 1);
        if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;")
          return "unknown entity " + ent;
      }
    }
    return "";
  };
  while (i < s.size()) {
    size_t lt = s.find('<', i);
    if (lt == std::string::npos) {
      if (auto p = check_text(i, s.size()); !p.empty()) return p;
      for (size_t k = i; k < s.size(); ++k)
        if (!std::isspace(static_cast<unsigned char>(s[k]))) return "text after the root element";
      break;
    }
    if (open.empty()) {
      for (size_t k = i; k < lt; ++k)
        if (!std::isspace(static_cast<unsigned char>(s[k]))) return "text outside the root element";
    } else if (auto p = check_text(i, lt); !p.empty()) {
      return p;
    }
    size_t k = lt + 1;
    bool closing = k < s.size() && s[k] == '/';
    if (closing) ++k;
    size_t name_start = k;
    while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '-' || s[k] == ':')) ++k;
    std::string name = s.substr(name_start, k - name_start);
    if (name.empty()) return "empty tag name at " + std::to_string(lt);
    if (closing) {
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
      if (k >= s.size() || s[k] != '>') return "bad closing tag " + name;
      i = k + 1;
      continue;
    }
    if (open.empty() && seen_root) return "second root element " + name;
    seen_root = true;
    if (element_names) element_names->push_back(name);
    std::vector<std::string> attrs;
    while (true) {
      while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
      if (k >= s.size()) return "unterminated tag " + name;
      if (s[k] == '>') {
        open.push_back(name);
        ++k;
        break;
      }
      if (s[k] == '/' && k + 1 < s.size() && s[k + 1] == '>') {
        k += 2;
        break;
      }
      size_t a0 = k;
      while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '-' || s[k] == ':')) ++k;
      std::string attr = s.substr(a0, k - a0);
      if (attr.empty()) return "bad attribute in " + name;
      for (const auto& a : attrs)
        if (a == attr) return "duplicate attribute " + attr + " in " + name;
      attrs.push_back(attr);
      if (k + 1 >= s.size() || s[k] != '=' || s[k + 1] != '"') return "unquoted attribute " + attr;
      size_t end = s.find('"', k + 2);
      if (end == std::string::npos) return "unterminated attribute " + attr;
      for (size_t q = k + 2; q < end; ++q)
        if (s[q] == '<') return "'<' in attribute " + attr;
      if (auto p = check_text(k + 2, end); !p.empty()) return p;
      k = end + 1;
    }
    i = k;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (!seen_root) return "no root element";
  return "";
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

std::vector<double> values(const std::vector<AxisTick>& t) {
  std::vector<double> v;
  for (const auto& x : t) v.push_back(x.value);
  return v;
}

}  // namespace

TEST_CASE("the XML checker itself rejects broken documents") {
  CHECK(xml_problem("<svg><g></svg>") != "");
  CHECK(xml_problem("<svg a=1/>") != "");
  CHECK(xml_problem("<svg>a & b</svg>") != "");
  CHECK(xml_problem("<svg/><svg/>") != "");
  CHECK(xml_problem("<svg a=\"1\" a=\"2\"/>") != "");
  CHECK(xml_problem("<?xml version=\"1.0\"?>\n<svg><text>a &amp; b</text></svg>\n") == "");
}

TEST_CASE("linear ticks are nice numbers covering the range") {
  CHECK(values(linear_ticks(0, 10, 5)) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(values(linear_ticks(0.3, 9.2, 5)) == std::vector<double>{0, 2, 4, 6, 8, 10});
  auto t = linear_ticks(0, 1, 4);
  CHECK(values(t) == std::vector<double>{0, 0.5, 1});
  CHECK(t[1].label == "0.5");
  auto big = linear_ticks(0, 3.2e9, 4);
  CHECK(big.back().value >= 3.2e9);
  CHECK(big[1].label == "1G");
  auto same = linear_ticks(5, 5);
  CHECK(same.front().value <= 5);
  CHECK(same.back().value >= 5);
  CHECK(same.size() >= 2);
}

TEST_CASE("log ticks: decades, with 2x and 5x minors over short ranges") {
  CHECK(values(log_ticks(8, 512)) == std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000});
  CHECK(values(log_ticks(3e6, 4e10)) == std::vector<double>{1e6, 1e7, 1e8, 1e9, 1e10, 1e11});
  CHECK(values(log_ticks(10, 10)) == std::vector<double>{10, 20, 50, 100});
  auto t = log_ticks(1, 1e5);
  CHECK(t.size() == 6);
  CHECK(t[3].label == "1000");
  CHECK(t[4].label == "10k");
  CHECK(t[5].label == "100k");
  CHECK(format_tick(1.5e9) == "1.5G");
  CHECK(format_tick(175e9) == "175G");
  CHECK(format_tick(0.125) == "0.125");
  CHECK(format_tick(0) == "0");
}

TEST_CASE("line chart: well-formed, one polyline per series, escaped labels, legend") {
  LineChart c;
  c.title = "Max model <GPT> & friends";
  c.x_label = "devices";
  c.y_label = "parameters";
  c.log_x = c.log_y = true;
  c.x_ticks = {1, 8, 64, 512};
  c.series.push_back({"naive \"1 device\"", {1, 8, 64, 512}, {1e9, 1e9, 1e9, 1e9}, true});
  c.series.push_back({"pipelined", {1, 8, 64, 512}, {2e9, 1.6e10, 1.28e11, 1e12}, false});
  std::string svg = render_line_chart_svg(c);
  std::vector<std::string> names;
  CHECK(xml_problem(svg, &names) == "");
  CHECK(names.front() == "svg");
  CHECK(count(svg, "<polyline") == 2);
  CHECK(count(svg, "stroke-dasharray") == 2);  // the dashed series and its legend swatch
  CHECK(svg.find("Max model &lt;GPT&gt; &amp; friends") != std::string::npos);
  CHECK(svg.find("naive &quot;1 device&quot;") != std::string::npos);
  CHECK(svg.find(">512</text>") != std::string::npos);  // explicit x tick
  CHECK(svg.find(">1T</text>") != std::string::npos);   // log y decade label
}

TEST_CASE("line chart input errors") {
  LineChart c;
  c.title = "t";
  c.log_y = true;
  c.series.push_back({"s", {1, 2}, {1, 0}});
  CHECK_THROWS_WITH_AS(render_line_chart_svg(c), doctest::Contains("log axis"), pw::InputError);
  c.series[0].y = {1};
  CHECK_THROWS_WITH_AS(render_line_chart_svg(c), doctest::Contains("2 x values but 1 y values"), pw::InputError);
  LineChart empty;
  empty.title = "nothing";
  std::string svg = render_line_chart_svg(empty);
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("no data") != std::string::npos);
}

TEST_CASE("bar charts: grouped and stacked") {
  BarChart c;
  c.title = "memory per stage";
  c.categories = {"stage 0", "stage 1", "stage 2"};
  c.series = {{"weights+optimizer", {10, 10, 12}}, {"activations", {5, 3, 1}}};
  c.stacked = true;
  std::string stacked = render_bar_chart_svg(c);
  CHECK(xml_problem(stacked) == "");
  CHECK(count(stacked, "<rect") == 1 + 6 + 1 + 2);  // background, bars, frame, legend swatches
  c.stacked = false;
  std::string grouped = render_bar_chart_svg(c);
  CHECK(xml_problem(grouped) == "");
  c.series[1].values.pop_back();
  CHECK_THROWS_AS(render_bar_chart_svg(c), pw::InputError);
  c.series[1].values = {5, -3, 1};
  c.stacked = true;
  CHECK_THROWS_WITH_AS(render_bar_chart_svg(c), doctest::Contains("negative"), pw::InputError);
}

TEST_CASE("stacking charts keeps one well-formed document") {
  LineChart a;
  a.title = "a";
  a.series.push_back({"s", {1, 2, 3}, {3, 1, 2}});
  BarChart b;
  b.title = "b";
  b.categories = {"x"};
  b.series = {{"v", {1}}};
  std::string both = stack_svgs_vertically({render_line_chart_svg(a), render_bar_chart_svg(b)});
  std::vector<std::string> names;
  CHECK(xml_problem(both, &names) == "");
  CHECK(count(both, "<?xml") == 1);
  CHECK(both.find("height=\"1040\"") != std::string::npos);
}

namespace {

// Distinct values of attribute `attr` on the elements starting with `tag`.
std::set<std::string> attr_values(const std::string& svg, const std::string& tag, const std::string& attr) {
  std::set<std::string> out;
  for (size_t i = svg.find(tag); i != std::string::npos; i = svg.find(tag, i + 1)) {
    const size_t end = svg.find('>', i);
    const size_t a = svg.find(" " + attr + "=\"", i);
    if (a == std::string::npos || a > end) {
      out.insert("");
      continue;
    }
    const size_t v = a + attr.size() + 3;
    out.insert(svg.substr(v, svg.find('"', v) - v));
  }
  return out;
}

ThroughputCell cell(const std::string& schedule, int k, int m, bool feasible) {
  ThroughputCell c;
  c.schedule = schedule;
  c.stages = k;
  c.micro_batches = m;
  c.feasible = feasible;
  c.normalized = feasible ? 0.5 + 0.01 * m : 0;
  c.throughput_samples_per_s = c.normalized;
  return c;
}

}  // namespace

TEST_CASE("line chart: infeasible points are marked on the x axis, with a legend note") {
  LineChart c;
  c.title = "t";
  c.series.push_back({"a", {1, 2}, {3, 4}, false});
  c.series.push_back({"b", {2}, {5}, false});
  c.series[0].infeasible_x = {8};
  c.series[1].infeasible_x = {1, 8};
  const std::string svg = render_line_chart_svg(c);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "class=\"infeasible\"") == 3);
  CHECK(count(svg, "class=\"infeasible-legend\"") == 1);
  CHECK(svg.find("b: infeasible at 8") != std::string::npos);
  CHECK(svg.find("infeasible (on the x axis)") != std::string::npos);
  // Only infeasible points: still drawn, as marks, with "no data" for the lines.
  LineChart none;
  none.title = "none";
  none.series.push_back({"a", {}, {}, false});
  none.series[0].infeasible_x = {4, 16};
  const std::string n = render_line_chart_svg(none);
  CHECK(xml_problem(n) == "");
  CHECK(count(n, "class=\"infeasible\"") == 2);
  CHECK(n.find("no data") != std::string::npos);
  // Without infeasible points there is no note.
  c.series[0].infeasible_x.clear();
  c.series[1].infeasible_x.clear();
  CHECK(render_line_chart_svg(c).find("infeasible") == std::string::npos);
}

TEST_CASE("throughput chart: colour by schedule, dash by K, markers by schedule, infeasible cells marked") {
  std::vector<ThroughputCell> cells;
  int infeasible = 0;
  for (const char* s : {"gpipe", "1f1b", "zb-h1"})
    for (int k : {2, 4, 8})
      for (int m : {4, 16, 64}) {
        const bool ok = !(m == 4 && k == 8) && !(std::string(s) == "zb-h1" && m == 64);
        infeasible += !ok;
        cells.push_back(cell(s, k, m, ok));
      }
  const std::string svg = throughput_svg(cells, "grid");
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "<polyline") == 9);
  CHECK(attr_values(svg, "<polyline", "stroke").size() == 3);            // three schedules
  CHECK(attr_values(svg, "<polyline", "stroke-dasharray").size() == 3);  // three K: solid + two patterns
  CHECK(count(svg, "class=\"infeasible\"") == infeasible);
  CHECK(infeasible == 3 + 3);  // K=8,M=4 for each schedule; zb-h1 M=64 for each K
  // gpipe draws circles, 1f1b squares, zb-h1 triangles: every point keeps a visible shape.
  CHECK(count(svg, "<circle") >= 6);
  CHECK(svg.find("micro-batches per mini-batch") != std::string::npos);
  CHECK(svg.find("throughput relative to the baseline") != std::string::npos);
  // Later schedules are drawn thinner on top of earlier ones.
  const auto widths = attr_values(svg, "<polyline", "stroke-width");
  CHECK(widths.size() == 3);
}

TEST_CASE("axis words for result columns") {
  CHECK(axis_words("throughput_samples_per_s") == "samples per second");
  CHECK(axis_words("micro_batches") == "micro-batches per mini-batch");
  CHECK(axis_words("some_new_column") == "some new column");
}
