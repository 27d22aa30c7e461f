// `pipewright whatif max-model | throughput | sweep | best`: capacity studies on analytic profiles of
// the device catalog (whatif/*.h): the largest model that fits on N devices, the
// throughput of a (K, M, schedule) grid normalized to a baseline, and arbitrary sweeps from a
// spec file, and the 3D layout search (tools/cmd_whatif_best.cc). Tables on stdout (or JSON
// with --json), pictures with --svg; files are written
// only once everything has been computed.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "models/defaults.h"
#include "models/error.h"
#include "models/json_util.h"
#include "models/output_set.h"
#include "models/pipedream_import.h"
#include "models/profile.h"
#include "tools/cmd_whatif_best.h"
#include "tools/command_registry.h"
#include "tools/flag_checks.h"
#include "whatif/charts.h"
#include "whatif/config.h"
#include "whatif/eval.h"
#include "whatif/max_model.h"
#include "whatif/runner.h"
#include "whatif/sweep.h"
#include "whatif/throughput.h"

namespace {

using pw::Json;
using pw::whatif::WhatifConfig;

struct CommonArgs {
  WhatifConfig cfg;
  bool json = false;
  std::string svg;
  int threads = 0;
  bool progress = false, no_progress = false;
  bool fp32 = false;
  std::string dtype;  // "" = models::default_dtype of --device
};

void add_model_flags(CLI::App* sub, CommonArgs& a) {
  WhatifConfig& c = a.cfg;
  sub->add_option("--family", c.family, "gpt | mlp | vgg16 | resnet50")->capture_default_str();
  sub->add_option("--layers", c.layers, "gpt: transformer blocks")->capture_default_str();
  sub->add_option("--d-model", c.d_model, "gpt: hidden size")->capture_default_str();
  sub->add_option("--heads", c.heads, "gpt: attention heads")->capture_default_str();
  sub->add_option("--ffn", c.ffn, "gpt: MLP hidden size (0 = 4 * d-model)")->capture_default_str();
  sub->add_option("--seq", c.seq, "gpt: sequence length")->capture_default_str();
  sub->add_option("--vocab", c.vocab, "gpt: vocabulary size")->capture_default_str();
  sub->add_option("--batch", c.batch, "samples per mini-batch")->capture_default_str();
  sub->add_option("--depth", c.depth, "mlp: linear layers")->capture_default_str();
  sub->add_option("--width", c.width, "mlp: layer width")->capture_default_str();
  sub->add_option("--image", c.image, "conv nets: image side in pixels")->capture_default_str();
  sub->add_option("--width-divisor", c.width_divisor, "conv nets: divide every channel count")->capture_default_str();
  sub->add_option("--classes", c.classes, "conv nets: output classes")->capture_default_str();
  sub->add_flag("--tied-embeddings", c.tied_embeddings, "gpt: the LM head reuses the token embedding");
  sub->add_option("--device", c.device, "device kind from the catalog")->capture_default_str();
  sub->add_option("--devices-per-node", c.devices_per_node, "devices joined by --intra-node")->capture_default_str();
  sub->add_option("--intra-node", c.intra_node, "link inside a node")->capture_default_str();
  sub->add_option("--interconnect", c.interconnect, "link between nodes")->capture_default_str();
  sub->add_flag("--free-transfers", c.free_transfers, "transfers between devices cost nothing (idealized)");
  sub->add_option("--optimizer", c.optimizer,
                  "sgd | sgd-momentum | rmsprop | adam | adam-mixed (under bf16, adam is priced as adam-mixed)")
      ->capture_default_str();
  sub->add_option("--partitioner", c.partitioner, "dp | gpipe-greedy | even")->capture_default_str();
  sub->add_option("--efficiency", c.efficiency, pw::tools::kEfficiencyHelp)->capture_default_str();
  sub->add_option("--dtype", a.dtype, "fp32 | bf16 analytic costs (default: bf16 on an accelerator, fp32 on a CPU)");
  sub->add_flag("--fp32", a.fp32, "same as --dtype fp32");
  sub->add_flag("--json", a.json, "print rows as JSON");
  sub->add_option("--svg", a.svg, "write the study's pictures to this SVG file");
  sub->add_option("--threads", a.threads, "worker threads (default: all hardware threads)");
  sub->add_flag(
      "--progress", a.progress,
      "progress lines on a pipe from the start (default there: a line every 10% or 10 s once a run takes over 1 s)");
  sub->add_flag("--no-progress", a.no_progress, "no progress output");
}

void finish_common(CommonArgs& a) {
  if (a.fp32 && !a.dtype.empty() && a.dtype != "fp32")
    throw pw::InputError("--fp32 and --dtype " + a.dtype + ": give one of them");
  if (a.fp32) a.cfg.bf16 = false;
  else if (!a.dtype.empty()) a.cfg.bf16 = pw::models::parse_dtype(a.dtype, "--dtype");
  if (a.threads < 0) throw pw::InputError("--threads: expected an integer >= 0");
  // Settings go through the same checks as sweep spec values (ranges, catalog names).
  pw::whatif::config_from_json(pw::whatif::to_json(a.cfg), "");
  pw::whatif::validate_config(a.cfg, "");
}

pw::whatif::ProgressMode show_progress(const CommonArgs& a) {
  return pw::whatif::progress_mode(a.progress, a.no_progress);
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

// Rounded to `digits` decimals, for readable text tables.
double round_to(double v, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

std::string human_count(int64_t n) {
  char buf[32];
  double v = static_cast<double>(n);
  if (v >= 1e12) std::snprintf(buf, sizeof buf, "%.2fT", v / 1e12);
  else if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.2fB", v / 1e9);
  else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

std::string model_title(const WhatifConfig& c) {
  std::ostringstream o;
  if (c.family == "gpt")
    o << "GPT d_model " << c.d_model << ", heads " << c.heads << ", seq " << c.seq << ", vocab " << c.vocab;
  else if (c.family == "mlp") o << "MLP width " << c.width;
  else o << c.family;
  o << ", batch " << c.batch << ", " << pw::whatif::whatif_optimizer(c) << " on " << c.device;
  return o.str();
}

// ---- max-model ----

struct MaxModelArgs {
  CommonArgs common;
  std::vector<int> devices{1, 8, 64};
  int64_t max_layers = 1 << 20;
};

void run_max_model(MaxModelArgs& a) {
  finish_common(a.common);
  WhatifConfig& c = a.common.cfg;
  std::vector<pw::whatif::MaxModelResult> rows =
      pw::whatif::max_model_study(c, a.devices, a.max_layers, a.common.threads, show_progress(a.common));
  pw::whatif::Table t = pw::whatif::max_model_table(rows);
  if (a.common.json) {
    std::cout << Json(pw::whatif::StudyRows{"max-model", t}).dump(2) << "\n";
  } else {
    pw::whatif::Table v;
    v.columns = {"devices",
                 "mode",
                 pw::whatif::max_model_size_setting(c.family),
                 "parameters",
                 "weights+opt GiB",
                 "activations GiB",
                 "total GiB",
                 "stages",
                 "M",
                 "recompute",
                 "iteration s",
                 "probes"};
    for (const auto& r : rows) {
      if (!r.reason.empty()) {
        v.rows.push_back({r.devices, std::string(to_string(r.mode)), 0, "does not fit", nullptr, nullptr, nullptr,
                          nullptr, nullptr, nullptr, nullptr, nullptr});
        continue;
      }
      v.rows.push_back({r.devices, std::string(to_string(r.mode)),
                        r.capped ? Json(std::to_string(r.layers) + "+") : Json(r.layers), human_count(r.parameters),
                        gib(r.weights_optimizer_bytes), gib(r.activation_bytes), gib(r.memory_bytes), r.stages,
                        r.micro_batches, std::to_string(r.recompute_stages) + "/" + std::to_string(r.stages),
                        round_to(r.iteration_s, 3), r.probes});
    }
    std::cout << "largest model that fits: " << model_title(c) << " (" << gib(rows.front().device_memory_bytes)
              << " GiB per device)\n"
              << pw::whatif::to_text(v);
    for (const auto& r : rows)
      if (!r.reason.empty()) std::cout << "note: " << r.reason << "\n";
  }
  std::cout.flush();  // results are out before the picture is drawn
  if (!a.common.svg.empty())
    pw::write_file_atomic(a.common.svg, pw::whatif::max_model_svg(rows, "Largest model that fits: " + model_title(c)));
}

// ---- throughput ----

struct ThroughputArgs {
  CommonArgs common;
  std::vector<int> stages{1, 2, 4, 8};
  std::vector<int> micro_batches{1, 4, 8, 32};
  std::vector<std::string> schedules{"gpipe"};
  std::string baseline;
  std::string recompute = pw::models::kDefaultRecompute;
  std::string profile;
};

// --baseline K,M[,schedule] into the request.
void set_baseline(const std::string& text, pw::whatif::ThroughputRequest& req) {
  std::stringstream ss(text);
  std::string k, m, s;
  std::getline(ss, k, ',');
  std::getline(ss, m, ',');
  std::getline(ss, s, ',');
  try {
    size_t pk = 0, pm = 0;
    req.baseline_stages = std::stoi(k, &pk);
    req.baseline_micro_batches = std::stoi(m, &pm);
    if (pk != k.size() || pm != m.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw pw::InputError("--baseline: expected K,M[,schedule] (e.g. 2,1,gpipe), got \"" + text + "\"");
  }
  req.baseline_schedule = s;
}

// The cells as the text table prints them (rounded; a note where a cell does not fit or its
// simulated peak exceeds the device).
pw::whatif::Table throughput_text_table(const std::vector<pw::whatif::ThroughputCell>& cells) {
  pw::whatif::Table v;
  v.columns = {"K",         "M",          "schedule",   "stages",   "iteration s",
               "samples/s", "normalized", "idle share", "peak GiB", "note"};
  for (const auto& cell : cells) {
    if (!cell.feasible) {
      v.rows.push_back({cell.stages, cell.micro_batches, cell.schedule, nullptr, nullptr, nullptr, nullptr, nullptr,
                        nullptr, "does not fit: " + cell.reason});
      continue;
    }
    v.rows.push_back({cell.stages, cell.micro_batches, cell.schedule, cell.stages_used, round_to(cell.iteration_s, 4),
                      round_to(cell.throughput_samples_per_s, 1),
                      cell.normalized >= 0 ? Json(round_to(cell.normalized, 3)) : Json(nullptr),
                      round_to(cell.idle_share, 3), round_to(cell.peak_memory_bytes / double(1LL << 30), 2),
                      cell.peak_memory_bytes > cell.device_memory_bytes
                          ? Json("simulated peak exceeds the device's " + gib(cell.device_memory_bytes) + " GiB")
                          : Json(nullptr)});
  }
  return v;
}

void run_throughput(ThroughputArgs& a) {
  a.common.cfg.recompute = a.recompute;
  finish_common(a.common);
  WhatifConfig& c = a.common.cfg;
  pw::whatif::ThroughputRequest req;
  req.stages = a.stages;
  req.micro_batches = a.micro_batches;
  req.schedules = a.schedules;
  req.threads = a.common.threads;
  req.progress = show_progress(a.common);
  if (!a.baseline.empty()) set_baseline(a.baseline, req);
  pw::models::Profile measured;
  if (!a.profile.empty()) {
    measured = pw::models::load_any_profile_file(a.profile);
    req.profile = &measured;
  }
  std::vector<pw::whatif::ThroughputCell> cells = pw::whatif::throughput_grid(c, req);
  pw::whatif::Table t = pw::whatif::throughput_table(cells);
  const std::string title =
      a.profile.empty() ? model_title(c)
                        : "profile of " + measured.model + ", batch " + std::to_string(c.batch) + " on " + c.device;
  if (a.common.json) std::cout << Json(pw::whatif::StudyRows{"throughput", t}).dump(2) << "\n";
  else
    std::cout << "throughput grid: " << title << ", recompute " << c.recompute << "\n"
              << pw::whatif::to_text(throughput_text_table(cells));
  std::cout.flush();  // results are out before the picture is drawn
  if (!a.common.svg.empty())
    pw::write_file_atomic(a.common.svg, pw::whatif::throughput_svg(cells, "Throughput vs micro-batches: " + title));
}

// ---- sweep ----

struct SweepArgs {
  std::string spec;
  std::string output;
  bool json = false;
  std::string svg, svg_x, svg_metric = "throughput_samples_per_s";
  int threads = 0;
  bool progress = false, no_progress = false;
  bool no_simulate = false;
};

void run_sweep_cmd(SweepArgs& a) {
  if (a.threads < 0) throw pw::InputError("--threads: expected an integer >= 0");
  pw::whatif::SweepSpec spec = pw::whatif::load_sweep_spec(a.spec);
  for (const char* ext : {".csv", ".json"}) {
    std::error_code ec;
    if (!a.output.empty() && std::filesystem::equivalent(a.output + ext, a.spec, ec))
      throw pw::InputError("-o: " + a.output + ext + " is the --spec file; choose another prefix");
  }
  pw::whatif::expand_sweep(spec);  // invalid combinations fail before any work
  // So does a chart that could not be drawn.
  std::string x;
  if (!a.svg.empty())
    x = pw::whatif::check_sweep_chart(spec.axes, pw::whatif::whatif_result_columns(), a.svg_x, a.svg_metric);
  pw::whatif::SweepOptions o;
  o.threads = a.threads;
  o.progress = pw::whatif::progress_mode(a.progress, a.no_progress);
  pw::whatif::EvalOptions eo;
  eo.simulate = !a.no_simulate;
  pw::whatif::Table t = pw::whatif::run_sweep(
      spec, pw::whatif::whatif_result_columns(),
      [&](const WhatifConfig& c) { return pw::whatif::whatif_result_row(pw::whatif::evaluate_whatif(c, eo)); }, o);
  // Written to temporaries; renamed into place together by the caller (models/output_set.h).
  Json result = pw::whatif::sweep_result_json(spec, t);
  if (a.json) std::cout << result.dump(2) << "\n";
  else if (a.output.empty()) std::cout << pw::whatif::to_text(t);
  if (!a.output.empty()) {
    pw::write_file_atomic(a.output + ".csv", pw::whatif::to_csv(t));
    pw::save_json_file(a.output + ".json", result);
  }
  if (!a.svg.empty()) {
    std::vector<std::string> axes;
    for (const auto& ax : spec.axes) axes.push_back(ax.name);
    pw::write_file_atomic(a.svg,
                          pw::whatif::sweep_svg(t, axes, x, a.svg_metric, "Sweep " + a.spec + ": " + a.svg_metric));
  }
  int feasible = 0;
  const int fi = t.column("feasible");
  for (const auto& r : t.rows) feasible += r[fi] == true;
  std::cerr << "sweep: " << t.rows.size() << " points, " << feasible << " feasible"
            << (a.output.empty() ? "" : "; wrote " + a.output + ".csv and " + a.output + ".json") << "\n";
}

void add_max_model(CLI::App* sub) {
  auto mm = std::make_shared<MaxModelArgs>();
  // max-model alone keeps recompute "on" (models/defaults.h: kMaxModelRecompute): at the largest
  // model memory binds, and "auto" finds the same size (tests/whatif/max_model_test.cc), but its
  // per-stage search made the default study (1,8,64 devices) take over 13 minutes instead of 4 s.
  mm->common.cfg.recompute = pw::models::kMaxModelRecompute;
  auto* m = sub->add_subcommand("max-model", "Largest model (layers, parameters) that fits on N devices");
  add_model_flags(m, mm->common);
  m->add_option("--devices", mm->devices, "device counts, e.g. 1,8,64")->delimiter(',')->capture_default_str();
  m->add_option("--micro-batches", mm->common.cfg.micro_batches, "pipelined: auto or a count")->capture_default_str();
  m->add_option(
       "--recompute", mm->common.cfg.recompute,
       "pipelined: on | auto (only the stages whose memory requires it: the same largest size, far slower) | off")
      ->capture_default_str();
  m->add_option("--schedule", mm->common.cfg.schedule, "pipelined: gpipe | 1f1b | zb-h1")->capture_default_str();
  m->add_option("--max-layers", mm->max_layers, "stop the search at this size")->capture_default_str();
  m->callback([mm] {
    pw::OutputSet outputs;
    outputs.add("--svg", mm->common.svg);
    run_max_model(*mm);
    outputs.commit();
  });
}

void add_throughput(CLI::App* sub) {
  auto tp = std::make_shared<ThroughputArgs>();
  auto* t = sub->add_subcommand("throughput", "Simulated throughput over partitions K x micro-batches M x schedules");
  add_model_flags(t, tp->common);
  t->add_option("--stages,-K", tp->stages, "partition counts, e.g. 2,4,8")->delimiter(',')->capture_default_str();
  t->add_option("--micro-batches,-M", tp->micro_batches, "micro-batch counts, e.g. 1,4,32")
      ->delimiter(',')
      ->capture_default_str();
  t->add_option("--schedules", tp->schedules, "gpipe,1f1b,zb-h1")->delimiter(',')->capture_default_str();
  t->add_option("--baseline", tp->baseline, "K,M[,schedule] of the cell normalized to 1 (default: first cell)");
  t->add_option("--recompute", tp->recompute, "auto (only the stages whose memory requires it) | on | off")
      ->capture_default_str();
  t->add_option("--profile", tp->profile,
                "a profile JSON (pipewright.profile/1) used instead of the analytic one; --device still "
                "sets the memory and the cluster");
  t->callback([tp] {
    pw::OutputSet outputs;
    outputs.add("--svg", tp->common.svg);
    run_throughput(*tp);
    outputs.commit();
  });
}

void add_sweep(CLI::App* sub) {
  auto sw = std::make_shared<SweepArgs>();
  auto* s = sub->add_subcommand("sweep", "Evaluate a grid of settings from a spec file, in parallel");
  s->add_option("--spec", sw->spec, "sweep spec JSON (pipewright.sweep/1)")->required();
  s->add_option("-o,--output", sw->output, "write PREFIX.csv and PREFIX.json");
  s->add_flag("--json", sw->json, "print the result JSON");
  s->add_option("--svg", sw->svg, "write a line chart of --svg-metric against --svg-x");
  s->add_option("--svg-x", sw->svg_x, "x axis of the chart (default: devices, else the first numeric axis)");
  s->add_option("--svg-metric", sw->svg_metric, "result column on the y axis")->capture_default_str();
  s->add_option("--threads", sw->threads, "worker threads (default: all hardware threads)");
  s->add_flag("--no-simulate", sw->no_simulate, "planner predictions only (faster)");
  s->add_flag(
      "--progress", sw->progress,
      "progress lines on a pipe from the start (default there: a line every 10% or 10 s once a run takes over 1 s)");
  s->add_flag("--no-progress", sw->no_progress, "no progress output");
  s->callback([sw] {
    pw::OutputSet outputs;
    if (!sw->output.empty()) {
      outputs.add("-o", sw->output + ".csv");
      outputs.add("-o", sw->output + ".json");
    }
    outputs.add("--svg", sw->svg);
    run_sweep_cmd(*sw);
    outputs.commit();
  });
}

pw::tools::CommandRegistrar register_whatif("whatif", [](CLI::App& app) {
  auto* sub = app.add_subcommand("whatif", "Capacity studies: largest model, throughput grids, sweeps, 3D layouts");
  sub->require_subcommand(1);
  add_max_model(sub);
  add_throughput(sub);
  add_sweep(sub);
  pw::tools::add_whatif_best(sub);
});

}  // namespace
