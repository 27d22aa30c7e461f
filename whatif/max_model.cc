#include "whatif/max_model.h"

#include <algorithm>
#include <cmath>

#include "models/cost.h"
#include "models/device.h"
#include "models/error.h"
#include "models/optimizer_memory.h"
#include "whatif/eval.h"
#include "whatif/runner.h"

namespace pw::whatif {
namespace {

void set_size(WhatifConfig& c, int64_t size) {
  if (c.family == "gpt") c.layers = size;
  else c.depth = size;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

}  // namespace

std::string_view to_string(MaxModelMode m) { return m == MaxModelMode::naive ? "naive" : "pipelined"; }

std::string max_model_size_setting(const std::string& family) {
  if (family == "gpt") return "layers";
  if (family == "mlp") return "depth";
  throw InputError("--family: max-model searches over the number of layers of gpt or the depth of mlp; \"" + family +
                   "\" has a fixed depth");
}

MaxModelResult find_max_model(const WhatifConfig& config, MaxModelMode mode, int64_t max_size,
                              bool exact_partitioning) {
  max_model_size_setting(config.family);
  WhatifConfig c = config;
  if (mode == MaxModelMode::naive) {
    c.devices = 1;
    c.micro_batches = "1";
    c.recompute = "off";
    c.schedule = "gpipe";
  }
  validate_config(c, "");
  build_whatif_cluster(c);  // device-count errors before any search

  EvalOptions eo;
  eo.simulate = false;
  eo.prescreen = false;
  eo.exact_partitioning = exact_partitioning;
  const int64_t capacity = models::find_device(c.device).memory_bytes;
  int probes = 0;
  WhatifEvaluation best;
  int64_t best_size = 0;
  // Memory the planner reports at a probed size: the fullest device's need when it fits, the
  // smallest per-device memory that would fit when not (<= 0: unknown).
  int64_t lo = 0, hi = 0;  // largest size that fits; smallest that does not (0: none yet)
  double mem_lo = 0, mem_hi = 0;
  auto probe = [&](int64_t size) {
    set_size(c, size);
    ++probes;
    WhatifEvaluation e = evaluate_whatif(c, eo);
    if (e.feasible) {
      if (size > lo) lo = size, mem_lo = static_cast<double>(e.outcome.plan.predicted.peak_memory_bytes);
      if (size > best_size) best = std::move(e), best_size = size;
      return true;
    }
    if (hi == 0 || size < hi) hi = size, mem_hi = static_cast<double>(e.outcome.min_memory_bytes_to_fit);
    if (size == 1) best = std::move(e);
    return false;
  };

  if (!probe(1)) {
    int64_t need = best.outcome.min_memory_bytes_to_fit;
    throw Infeasible(std::string(to_string(mode)) + ": " + c.family + " with 1 " + max_model_size_setting(c.family) +
                     " does not fit on " + std::to_string(c.devices) + " x " + c.device + " (" + gib(capacity) +
                     " each)" + (need > 0 ? ": needs " + gib(need) + " per device" : "") + " (" + best.reason + ")");
  }
  // Persistent bytes of one more layer, spread over the devices: the slope of the memory of
  // the fullest device in the size, used until two probes give a measured slope.
  double slope = 0;
  {
    WhatifConfig a = c, b = c;
    set_size(a, 1);
    set_size(b, 2);
    slope = static_cast<double>(models::model_parameter_count(build_whatif_model(b)) -
                                models::model_parameter_count(build_whatif_model(a))) *
            models::find_optimizer(whatif_optimizer(c)).total() / c.devices;
  }
  // Secant steps on memory(size) = capacity inside the bracket, with a bisection step whenever
  // a secant step does not halve the bracket (the planner's memory is a step function of the
  // size: stages hold whole layers).
  bool bisect_next = false;
  while (hi == 0 || hi - lo > 1) {
    if (hi == 0 && lo >= max_size) break;
    double guess;
    if (hi == 0) {
      guess = slope > 0 && mem_lo < capacity ? lo + (capacity - mem_lo) / slope : 2.0 * lo;
      guess = std::max(guess, lo + 1.0);
      if (lo > 1) guess = std::min(guess, 4.0 * lo);
      guess = std::min(guess, static_cast<double>(max_size));
    } else if (bisect_next || mem_hi <= mem_lo || mem_hi <= 0) {
      guess = lo + (hi - lo) / 2.0;
    } else {
      guess = lo + (capacity - mem_lo) * (hi - lo) / (mem_hi - mem_lo);
    }
    int64_t size = static_cast<int64_t>(std::floor(guess));
    if (hi != 0) size = std::clamp<int64_t>(size, lo + 1, hi - 1);
    const int64_t before = hi == 0 ? 0 : hi - lo;
    probe(size);
    bisect_next = before > 0 && (hi - lo) * 2 > before;
  }
  MaxModelResult r;
  r.capped = hi == 0;
  PW_CHECK(best_size == lo, "max-model search lost its best probe");

  const planner::Plan& p = best.outcome.plan;
  r.devices = c.devices;
  r.mode = mode;
  r.layers = lo;
  r.parameters = best.parameters;
  r.device_memory_bytes = models::find_device(c.device).memory_bytes;
  r.stages = p.num_stages();
  r.micro_batches = p.num_micro_batches;
  r.micro_batch_size = p.micro_batch_size;
  r.iteration_s = p.predicted.iteration_time_s;
  r.throughput_samples_per_s = p.predicted.throughput_samples_per_s;
  r.probes = probes;
  for (const planner::StagePlan& s : p.stages) {
    r.recompute_stages += s.recompute ? 1 : 0;
    r.stage_memory.push_back(
        {s.predicted.weights_optimizer_bytes, s.predicted.activation_bytes, s.predicted.memory_bytes});
    if (s.predicted.memory_bytes > r.memory_bytes) {
      r.memory_bytes = s.predicted.memory_bytes;
      r.weights_optimizer_bytes = s.predicted.weights_optimizer_bytes;
      r.activation_bytes = s.predicted.activation_bytes;
    }
  }
  return r;
}

std::vector<MaxModelResult> max_model_study(const WhatifConfig& config, const std::vector<int>& devices,
                                            int64_t max_size, int threads, ProgressMode progress) {
  max_model_size_setting(config.family);
  if (devices.empty()) throw InputError("--devices: expected at least one device count");
  std::vector<WhatifConfig> configs{config};
  std::vector<MaxModelMode> modes{MaxModelMode::naive};
  for (int d : devices) {
    if (d < 1) throw InputError("--devices: expected integers >= 1, got " + std::to_string(d));
    WhatifConfig p = config;
    p.devices = d;
    validate_config(p, "");
    build_whatif_cluster(p);  // bad device counts fail before any search
    configs.push_back(p);
    modes.push_back(MaxModelMode::pipelined);
  }
  std::vector<MaxModelResult> rows(configs.size());
  std::vector<std::string> infeasible(configs.size());
  ProgressBar bar(stderr, configs.size(), "max-model", progress);
  parallel_for(
      configs.size(), threads,
      [&](size_t i) {
        try {
          rows[i] = find_max_model(configs[i], modes[i], max_size);
        } catch (const Infeasible& e) {
          infeasible[i] = e.what();
          rows[i].devices = modes[i] == MaxModelMode::naive ? 1 : configs[i].devices;
          rows[i].mode = modes[i];
          rows[i].device_memory_bytes = models::find_device(configs[i].device).memory_bytes;
          rows[i].reason = e.what();
        }
      },
      &bar);
  bar.finish();
  if (std::all_of(infeasible.begin(), infeasible.end(), [](const std::string& s) { return !s.empty(); }))
    throw Infeasible(infeasible.front());
  return rows;
}

Table max_model_table(const std::vector<MaxModelResult>& rows) {
  Table t;
  t.columns = {"devices",
               "mode",
               "layers",
               "parameters",
               "weights_optimizer_bytes",
               "activation_bytes",
               "memory_bytes",
               "device_memory_bytes",
               "stages",
               "micro_batches",
               "micro_batch_size",
               "recompute_stages",
               "iteration_s",
               "throughput_samples_per_s",
               "probes",
               "reason"};
  for (const MaxModelResult& r : rows)
    t.add_row(Json{{"devices", r.devices},
                   {"mode", std::string(to_string(r.mode))},
                   {"layers", r.layers},
                   {"parameters", r.parameters},
                   {"weights_optimizer_bytes", r.weights_optimizer_bytes},
                   {"activation_bytes", r.activation_bytes},
                   {"memory_bytes", r.memory_bytes},
                   {"device_memory_bytes", r.device_memory_bytes},
                   {"stages", r.stages},
                   {"micro_batches", r.micro_batches},
                   {"micro_batch_size", r.micro_batch_size},
                   {"recompute_stages", r.recompute_stages},
                   {"iteration_s", r.iteration_s},
                   {"throughput_samples_per_s", r.throughput_samples_per_s},
                   {"probes", r.probes},
                   {"reason", r.reason.empty() ? Json(nullptr) : Json(r.reason)}});
  return t;
}

}  // namespace pw::whatif
