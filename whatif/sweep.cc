#include "whatif/sweep.h"

#include "models/error.h"
#include "models/error_text.h"
#include "whatif/runner.h"

namespace pw::whatif {
namespace {

bool is_catalog_setting(std::string_view name) {
  return name == "family" || name == "device" || name == "intra_node" || name == "interconnect" ||
         name == "optimizer" || name == "schedule";
}

// Checks one value the way a point would: type and range, and for catalog names, existence.
void check_value(std::string_view name, const Json& value, const std::string& path) {
  WhatifConfig c;
  apply_setting(c, name, value, path);
  if (!is_catalog_setting(name)) return;
  try {
    check_catalog_name(name, value.get<std::string>());
  } catch (const InputError& e) {
    std::string msg = e.what();
    if (msg.rfind("schedule: ", 0) == 0) msg = msg.substr(10);
    throw InputError(path + ": " + msg);
  }
}

}  // namespace

size_t SweepSpec::num_points() const {
  size_t n = 1;
  for (const SweepAxis& a : axes) n *= a.values.size();
  return axes.empty() ? 0 : n;
}

SweepSpec sweep_spec_from_json(const Json& j) {
  require_object(j, "");
  check_format(j, "sweep", 1, "");
  for (const auto& [key, value] : j.items())
    if (key != "format" && key != "fixed" && key != "axes")
      throw InputError("/" + key + ": unknown key (expected format, fixed, axes)");
  SweepSpec s;
  if (j.contains("fixed")) {
    require_object(j.at("fixed"), "/fixed");
    for (const auto& [key, value] : j.at("fixed").items()) check_value(key, value, "/fixed/" + key);
    s.fixed = j.at("fixed");
  }
  const Json& axes = require_field(j, "axes", "");
  require_object(axes, "/axes");
  if (axes.empty()) throw InputError("/axes: expected at least one axis");
  for (const auto& [key, value] : axes.items()) {
    std::string path = "/axes/" + key;
    if (!is_whatif_setting(key)) {
      WhatifConfig c;
      apply_setting(c, key, value, path);  // throws the "unknown setting" message
    }
    if (s.fixed.contains(key)) throw InputError(path + ": \"" + key + "\" is both fixed and an axis");
    if (!value.is_array()) throw InputError(path + ": expected an array of values, got " + json_type_name(value));
    if (value.empty()) throw InputError(path + ": empty axis (expected at least one value)");
    for (size_t i = 0; i < value.size(); ++i) {
      check_value(key, value[i], join_path(path, i));
      for (size_t k = 0; k < i; ++k)
        if (value[k] == value[i])
          throw InputError(join_path(path, i) + ": duplicate value " + describe_json_value(value[i]) +
                           " (also at index " + std::to_string(k) + ")");
    }
  }
  for (std::string_view name : whatif_setting_names()) {
    std::string key(name);
    if (axes.contains(key)) s.axes.push_back({key, axes.at(key).get<std::vector<Json>>()});
  }
  size_t n = 1;
  for (const SweepAxis& a : s.axes) {
    if (n > kMaxSweepPoints / a.values.size())
      throw InputError("/axes: the grid has more than " + std::to_string(kMaxSweepPoints) + " points");
    n *= a.values.size();
  }
  return s;
}

SweepSpec load_sweep_spec(const std::string& file) {
  return parse_json_file<SweepSpec>(file, [](const Json& j) { return sweep_spec_from_json(j); });
}

Json to_json(const SweepSpec& s) {
  Json axes = Json::object();
  for (const SweepAxis& a : s.axes) axes[a.name] = a.values;
  return Json{{"format", format_tag("sweep", 1)}, {"fixed", s.fixed}, {"axes", axes}};
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& s) {
  WhatifConfig base;
  for (const auto& [key, value] : s.fixed.items()) apply_setting(base, key, value, "/fixed/" + key);
  size_t n = s.num_points();
  std::vector<SweepPoint> points;
  points.reserve(n);
  std::vector<size_t> digit(s.axes.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    SweepPoint p{i, base, Json::object()};
    for (size_t a = 0; a < s.axes.size(); ++a) {
      const Json& v = s.axes[a].values[digit[a]];
      apply_setting(p.config, s.axes[a].name, v, "/axes/" + s.axes[a].name);
      p.axis_values[s.axes[a].name] = v;
    }
    validate_config(p.config, "sweep point " + std::to_string(i) + " " + describe_json_value(p.axis_values, 200));
    points.push_back(std::move(p));
    for (size_t a = s.axes.size(); a-- > 0;) {
      if (++digit[a] < s.axes[a].values.size()) break;
      digit[a] = 0;
    }
  }
  return points;
}

Table run_sweep(const SweepSpec& s, const std::vector<std::string>& result_columns, const SweepEvaluator& evaluate,
                const SweepOptions& options) {
  std::vector<SweepPoint> points = expand_sweep(s);
  std::vector<Json> results(points.size());
  ProgressBar bar(options.progress_out, points.size(), "sweep", options.progress);
  parallel_for(
      points.size(), options.threads,
      [&](size_t i) {
        Json r = evaluate(points[i].config);
        PW_CHECK(r.is_object(), "sweep evaluator must return an object");
        results[i] = std::move(r);
      },
      &bar);
  bar.finish();

  Table t;
  t.columns.push_back("point");
  for (const SweepAxis& a : s.axes) t.columns.push_back(a.name);
  for (const std::string& c : result_columns) {
    PW_CHECK(t.column(c) < 0, "result column " + c + " collides with an axis");
    t.columns.push_back(c);
  }
  for (size_t i = 0; i < points.size(); ++i) {
    Json row = results[i];
    row["point"] = i;
    for (const auto& [k, v] : points[i].axis_values.items()) row[k] = v;
    t.add_row(row);
  }
  return t;
}

Json sweep_result_json(const SweepSpec& s, const Table& t) {
  return Json{{"format", format_tag("sweep-result", 1)},
              {"spec", to_json(s)},
              {"columns", t.columns},
              {"rows", rows_to_json(t)}};
}

}  // namespace pw::whatif
