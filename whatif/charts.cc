#include "whatif/charts.h"

#include <algorithm>
#include <map>
#include <set>

#include "models/error.h"
#include "whatif/chart_svg.h"

namespace pw::whatif {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<double> sorted_unique(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::string max_model_svg(const std::vector<MaxModelResult>& rows, const std::string& title) {
  LineChart lc;
  lc.title = title;
  lc.x_label = "devices";
  lc.y_label = "parameters of the largest model that fits";
  lc.log_x = lc.log_y = true;
  LineSeries pipelined{"pipelined (micro-batching + re-materialization)", {}, {}, false};
  const MaxModelResult* naive = nullptr;
  std::vector<double> devices;
  for (const MaxModelResult& r : rows) {
    if (!r.reason.empty()) {  // nothing fits: an 'x' on the x axis
      if (r.mode != MaxModelMode::naive) {
        pipelined.infeasible_x.push_back(r.devices);
        devices.push_back(r.devices);
      }
      continue;
    }
    if (r.mode == MaxModelMode::naive) {
      naive = &r;
      continue;
    }
    pipelined.x.push_back(r.devices);
    pipelined.y.push_back(static_cast<double>(r.parameters));
    devices.push_back(r.devices);
  }
  if (devices.empty() && naive) devices.push_back(1);
  devices = sorted_unique(devices);
  lc.x_ticks = devices;
  if (!pipelined.x.empty() || !pipelined.infeasible_x.empty()) lc.series.push_back(pipelined);
  if (naive) {
    LineSeries n{"naive (1 device, no pipelining)", {}, {}, true};
    for (double d : devices) n.x.push_back(d), n.y.push_back(static_cast<double>(naive->parameters));
    lc.series.push_back(n);
  }

  BarChart bc;
  bc.title = "Memory of the fullest device at the largest model (GiB)";
  bc.x_label = "configuration";
  bc.y_label = "GiB";
  bc.stacked = true;
  BarSeries w{"weights + gradients + optimizer", {}}, a{"activations", {}}, free_{"free", {}, "#d9d9d9"};
  for (const MaxModelResult& r : rows) {
    if (!r.reason.empty()) continue;
    bc.categories.push_back(std::string(to_string(r.mode)) + " " + std::to_string(r.devices));
    w.values.push_back(r.weights_optimizer_bytes / kGiB);
    a.values.push_back(r.activation_bytes / kGiB);
    free_.values.push_back(std::max<double>(0, r.device_memory_bytes - r.memory_bytes) / kGiB);
  }
  bc.series = {w, a, free_};
  return stack_svgs_vertically({render_line_chart_svg(lc), render_bar_chart_svg(bc)});
}

std::string throughput_svg(const std::vector<ThroughputCell>& cells, const std::string& title) {
  LineChart lc;
  lc.title = title;
  lc.x_label = "micro-batches per mini-batch (M)";
  lc.y_label = "throughput relative to the baseline";
  lc.log_x = true;
  // Colour (and marker) by schedule, dash by pipeline depth K.
  std::vector<std::string> schedules;
  std::vector<int> depths;
  for (const ThroughputCell& c : cells) {
    if (std::find(schedules.begin(), schedules.end(), c.schedule) == schedules.end()) schedules.push_back(c.schedule);
    depths.push_back(c.stages);
  }
  std::sort(depths.begin(), depths.end());
  depths.erase(std::unique(depths.begin(), depths.end()), depths.end());
  auto index_of = [](const auto& v, const auto& x) {
    return static_cast<int>(std::find(v.begin(), v.end(), x) - v.begin());
  };
  std::map<std::pair<std::string, int>, LineSeries> lines;
  std::vector<std::pair<std::string, int>> order;
  std::vector<double> ms;
  for (const ThroughputCell& c : cells) {
    ms.push_back(c.micro_batches);
    auto key = std::make_pair(c.schedule, c.stages);
    if (!lines.count(key)) {
      LineSeries l{c.schedule + ", K=" + std::to_string(c.stages), {}, {}, false};
      l.color = index_of(schedules, c.schedule);
      l.dash = index_of(depths, c.stages);
      lines[key] = l;
      order.push_back(key);
    }
    if (!c.feasible || c.normalized < 0) {
      lines[key].infeasible_x.push_back(c.micro_batches);
      continue;
    }
    lines[key].x.push_back(c.micro_batches);
    lines[key].y.push_back(c.normalized);
  }
  lc.x_ticks = sorted_unique(ms);
  // Series grouped by schedule (colour), then K (dash), whatever order the cells came in.
  std::stable_sort(order.begin(), order.end(), [&](const auto& p, const auto& q) {
    return std::pair{index_of(schedules, p.first), p.second} < std::pair{index_of(schedules, q.first), q.second};
  });
  for (const auto& k : order) lc.series.push_back(lines[k]);
  std::vector<std::string> svgs{render_line_chart_svg(lc)};

  // Per schedule, the fastest feasible cell's per-stage memory.
  for (const std::string& s : schedules) {
    const ThroughputCell* best = nullptr;
    for (const ThroughputCell& c : cells)
      if (c.schedule == s && c.feasible && (!best || c.throughput_samples_per_s > best->throughput_samples_per_s))
        best = &c;
    if (!best) continue;
    BarChart bc;
    bc.title = "Memory per stage, " + s + " K=" + std::to_string(best->stages) +
               " M=" + std::to_string(best->micro_batches) + " (GiB)";
    bc.x_label = "stage";
    bc.y_label = "GiB";
    bc.stacked = true;
    BarSeries w{"weights + gradients + optimizer", {}}, a{"activations (planner)", {}};
    for (size_t i = 0; i < best->stage_memory.size(); ++i) {
      bc.categories.push_back(std::to_string(i));
      w.values.push_back(best->stage_memory[i].weights_optimizer_bytes / kGiB);
      a.values.push_back(best->stage_memory[i].activation_bytes / kGiB);
    }
    bc.series = {w, a};
    svgs.push_back(render_bar_chart_svg(bc));
  }
  return stack_svgs_vertically(svgs);
}

namespace {

InputError too_many_lines(size_t lines, const std::string& x_axis) {
  return InputError("--svg: the sweep has " + std::to_string(lines) + " lines (combinations of the axes other than " +
                    x_axis + "); at most 10 can be drawn");
}

}  // namespace

std::string check_sweep_chart(const std::vector<SweepAxis>& axes, const std::vector<std::string>& result_columns,
                              const std::string& x_axis, const std::string& metric) {
  auto all_numbers = [](const SweepAxis& a) {
    return std::all_of(a.values.begin(), a.values.end(), [](const Json& v) { return v.is_number(); });
  };
  auto is_result = [&](const std::string& c) {
    return std::find(result_columns.begin(), result_columns.end(), c) != result_columns.end();
  };
  const SweepAxis* x = nullptr;
  std::string x_name = x_axis;
  for (const SweepAxis& a : axes)
    if (a.name == x_axis || (x_axis.empty() && a.name == "devices")) x = &a;
  if (x_axis.empty() && x == nullptr)
    for (const SweepAxis& a : axes)
      if (all_numbers(a)) {
        x = &a;
        break;
      }
  if (x_axis.empty() && x == nullptr) throw InputError("--svg: the sweep has no numeric axis to put on the x axis");
  if (x != nullptr) {
    x_name = x->name;
    if (!all_numbers(*x)) throw InputError("--svg-x: column \"" + x_name + "\" is not numeric");
  } else if (!is_result(x_name)) {
    throw InputError("--svg-x: no column \"" + x_name + "\" in the sweep");
  }
  bool metric_is_axis = false;
  for (const SweepAxis& a : axes) metric_is_axis = metric_is_axis || a.name == metric;
  if (!metric_is_axis && !is_result(metric))
    throw InputError("--svg-metric: no column \"" + metric + "\" in the sweep");
  size_t lines = 1;
  for (const SweepAxis& a : axes)
    if (a.name != x_name) lines *= std::max<size_t>(a.values.size(), 1);
  if (lines > 10) throw too_many_lines(lines, x_name);
  return x_name;
}

std::string axis_words(const std::string& column) {
  static const std::map<std::string, std::string> words = {{"throughput_samples_per_s", "samples per second"},
                                                           {"samples_per_s", "samples per second"},
                                                           {"iteration_s", "iteration time (s)"},
                                                           {"micro_batches", "micro-batches per mini-batch"},
                                                           {"micro_batch_size", "samples per micro-batch"},
                                                           {"stages", "pipeline stages"},
                                                           {"stages_used", "pipeline stages used"},
                                                           {"devices", "devices"},
                                                           {"normalized", "throughput relative to the baseline"},
                                                           {"bubble_rate", "idle share of the iteration"},
                                                           {"peak_memory_bytes", "peak memory per device (bytes)"},
                                                           {"parameters", "parameters"},
                                                           {"flops_per_iteration", "FLOPs per iteration"},
                                                           {"batch", "samples per mini-batch"},
                                                           {"layers", "layers"},
                                                           {"hidden", "hidden size"}};
  auto it = words.find(column);
  if (it != words.end()) return it->second;
  std::string w = column;
  std::replace(w.begin(), w.end(), '_', ' ');
  return w;
}

std::string sweep_svg(const Table& t, const std::vector<std::string>& axes, const std::string& x_axis,
                      const std::string& metric, const std::string& title) {
  const int xi = t.column(x_axis), yi = t.column(metric), fi = t.column("feasible");
  if (xi < 0) throw InputError("--svg-x: no column \"" + x_axis + "\" in the sweep");
  if (yi < 0) throw InputError("--svg-metric: no column \"" + metric + "\" in the sweep");
  std::vector<int> key_cols;
  for (const std::string& a : axes)
    if (a != x_axis) key_cols.push_back(t.column(a));
  // Colour by the first other axis, dash by the second; further axes only name the line.
  std::vector<std::string> colour_values, dash_values;
  std::map<std::string, LineSeries> lines;
  std::vector<std::string> order;
  std::vector<double> xs;
  bool positive = true;
  auto slot = [](std::vector<std::string>& v, const std::string& x) {
    auto it = std::find(v.begin(), v.end(), x);
    if (it == v.end()) v.push_back(x);
    return static_cast<int>(std::find(v.begin(), v.end(), x) - v.begin());
  };
  for (const auto& row : t.rows) {
    if (!row[xi].is_number()) throw InputError("--svg-x: column \"" + x_axis + "\" is not numeric");
    std::string key;
    for (int k : key_cols) key += (key.empty() ? "" : ", ") + t.columns[k] + "=" + cell_text(row[k]);
    if (!lines.count(key)) {
      LineSeries l{key.empty() ? axis_words(metric) : key, {}, {}, false};
      l.color = key_cols.empty() ? 0 : slot(colour_values, cell_text(row[key_cols[0]]));
      l.dash = key_cols.size() < 2 ? 0 : slot(dash_values, cell_text(row[key_cols[1]]));
      lines[key] = l;
      order.push_back(key);
    }
    const double xv = row[xi].get<double>();
    if ((fi >= 0 && row[fi] != true) || !row[yi].is_number()) {
      lines[key].infeasible_x.push_back(xv);
      xs.push_back(xv);
      positive = positive && xv > 0;
      continue;
    }
    double x = row[xi].get<double>();
    xs.push_back(x);
    positive = positive && x > 0;
    lines[key].x.push_back(x);
    lines[key].y.push_back(row[yi].get<double>());
  }
  if (order.size() > 10) throw too_many_lines(order.size(), x_axis);
  LineChart lc;
  lc.title = title;
  lc.x_label = axis_words(x_axis);
  lc.y_label = axis_words(metric);
  xs = sorted_unique(xs);
  lc.log_x = positive && !xs.empty() && xs.back() >= 8 * xs.front();
  lc.x_ticks = xs.size() <= 12 ? xs : std::vector<double>{};
  for (const std::string& k : order) lc.series.push_back(lines[k]);
  return render_line_chart_svg(lc);
}

}  // namespace pw::whatif
