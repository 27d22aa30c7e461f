#include "whatif/eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/cost.h"
#include "models/defaults.h"
#include "models/device.h"
#include "models/error.h"
#include "models/optimizer_memory.h"
#include "sim/plan_prediction.h"

namespace pw::whatif {

models::ZooOptions zoo_options(const WhatifConfig& c) {
  models::ZooOptions o;
  o.layers = c.layers;
  o.d_model = c.d_model;
  o.heads = c.heads;
  o.ffn = c.ffn;
  o.seq = c.seq;
  o.vocab = c.vocab;
  o.batch = c.batch;
  o.depth = c.depth;
  o.width = c.width;
  o.image = c.image;
  o.width_divisor = c.width_divisor;
  o.classes = c.classes;
  o.tied_embeddings = c.tied_embeddings;
  return o;
}

models::Model build_whatif_model(const WhatifConfig& c) { return models::build_zoo_model(c.family, zoo_options(c)); }

models::Cluster build_whatif_cluster(const WhatifConfig& c) {
  const models::DeviceSpec& dev = models::find_device(c.device);
  const models::LinkSpec& intra = models::find_link(c.intra_node);
  std::string name = std::to_string(c.devices) + "x" + c.device;
  if (c.free_transfers)  // no latency and a bandwidth that makes any payload take 0 ns
    return models::Cluster(name + "-free", dev, {{"free", c.devices, 1e30, 0}});
  return models::make_node_cluster(dev, c.devices, c.devices_per_node, intra, models::find_link(c.interconnect));
}

models::Profile build_whatif_profile(const models::Model& model, const WhatifConfig& c) {
  return models::default_analytic_profile(model, models::find_device(c.device), c.batch, whatif_bf16(c), c.optimizer,
                                          c.efficiency);
}

planner::PlanRequest whatif_plan_request(const WhatifConfig& c) {
  planner::PlanRequest r;
  r.batch = c.batch;
  r.micro_batches = planner::parse_micro_batches_request(c.micro_batches, "micro_batches");
  r.schedule = planner::parse_schedule_request(c.schedule, "schedule");
  r.objective = planner::Objective::sync;
  r.recompute = planner::parse_recompute_choice(c.recompute, "recompute");
  r.partitioner = planner::parse_partitioner(c.partitioner, "partitioner");
  r.optimizer = whatif_optimizer(c);
  return r;
}

double persistent_per_parameter_byte(const std::string& optimizer) {
  const models::OptimizerMemory& o = models::find_optimizer(optimizer);
  return o.total() / o.weight_bytes;
}

double flops_per_iteration(const models::Model& model, const planner::Plan& plan) {
  using models::LayerKind;
  auto is_matmul = [](LayerKind k) {
    return k == LayerKind::linear || k == LayerKind::attention || k == LayerKind::transformer_block ||
           k == LayerKind::lm_head || k == LayerKind::conv2d;
  };
  const auto& layers = model.layers();
  std::vector<bool> recomputed(layers.size(), false);
  for (const planner::StagePlan& s : plan.stages)
    for (int l = s.first_layer; l < s.end_layer && l < static_cast<int>(layers.size()); ++l)
      recomputed[l] = s.recompute;
  double per_sample = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!is_matmul(layers[i].kind)) continue;
    models::LayerCost c = models::layer_cost(layers[i], 1);
    per_sample += c.forward_flops + c.backward_input_flops + c.backward_weight_flops;
    if (recomputed[i] && layers[i].kind != LayerKind::lm_head) per_sample += c.forward_flops;
  }
  return per_sample * static_cast<double>(plan.batch);
}

WhatifEvaluation evaluate_whatif(const WhatifConfig& c, const EvalOptions& options) {
  validate_config(c, "");
  WhatifEvaluation e;
  models::Model built;
  const models::Model* model = options.model;
  models::Profile analytic;
  const models::Profile* profile = options.profile;
  if (!profile) {
    built = build_whatif_model(c);
    model = &built;
    analytic = build_whatif_profile(built, c);
    profile = &analytic;
  }
  e.parameters = model ? models::model_parameter_count(*model) : 0;
  models::Cluster cluster = build_whatif_cluster(c);
  const double ppb = persistent_per_parameter_byte(whatif_optimizer(c));
  const int64_t memory = cluster.device().memory_bytes;
  for (const models::LayerProfile& l : profile->layers) {
    // A layer whose weights alone overflow a device can be placed nowhere.
    const double need = static_cast<double>(l.parameter_bytes) * ppb;
    if (need > static_cast<double>(memory)) {
      e.reason = "layer \"" + l.name + "\" needs " + std::to_string(static_cast<int64_t>(need)) +
                 " bytes for weights and optimizer state, more than a device's " + std::to_string(memory);
      e.outcome.min_memory_bytes_to_fit = static_cast<int64_t>(std::ceil(need));
      return e;
    }
  }
  if (options.prescreen) {
    double total = 0;
    for (const models::LayerProfile& l : profile->layers) total += static_cast<double>(l.parameter_bytes) * ppb;
    const double all = static_cast<double>(memory) * cluster.num_devices();
    if (total > all) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "weights, gradients and optimizer state (%.1f GiB) exceed the memory of all %d devices (%.1f GiB)",
                    total / (1LL << 30), cluster.num_devices(), all / (1LL << 30));
      e.reason = buf;
      return e;
    }
  }
  planner::PlanRequest request = whatif_plan_request(c);
  request.exact_partitioning = options.exact_partitioning;
  // The simulation below is the what-if's own (steady state over options.iterations); zb-h2 and
  // interleaved-1f1b are simulated by the planning call regardless (sim/plan_prediction.h).
  sim::PlanningOptions planning;
  planning.simulate = false;
  e.outcome = sim::plan_with_prediction(*profile, cluster, request, planning);
  e.feasible = e.outcome.feasible;
  if (!e.feasible) {
    e.reason = e.outcome.reason;
    return e;
  }
  if (model) e.flops_per_iteration = flops_per_iteration(*model, e.outcome.plan);
  if (options.simulate) {
    sim::SimOptions so;
    so.iterations = options.iterations;
    so.validate = false;  // generated by make_schedule, valid by construction
    e.report = sim::simulate_plan(e.outcome.plan, *profile, &cluster, so).report;
    e.simulated = true;
  }
  return e;
}

const std::vector<std::string>& whatif_result_columns() {
  static const std::vector<std::string> cols = {"feasible",
                                                "reason",
                                                "parameters",
                                                "stages",
                                                "micro_batches_used",
                                                "micro_batch_size",
                                                "recompute_stages",
                                                "iteration_s",
                                                "throughput_samples_per_s",
                                                "tflops_per_device",
                                                "bubble_rate",
                                                "peak_memory_bytes",
                                                "weights_optimizer_bytes",
                                                "activation_bytes",
                                                "min_memory_bytes_to_fit",
                                                "source"};
  return cols;
}

Json whatif_result_row(const WhatifEvaluation& e) {
  Json r = Json::object();
  r["feasible"] = e.feasible;
  r["reason"] = e.feasible ? Json(nullptr) : Json(e.reason);
  r["parameters"] = e.parameters;
  if (!e.feasible) {
    if (e.outcome.min_memory_bytes_to_fit > 0) r["min_memory_bytes_to_fit"] = e.outcome.min_memory_bytes_to_fit;
    return r;
  }
  const planner::Plan& p = e.outcome.plan;
  r["stages"] = p.num_stages();
  r["micro_batches_used"] = p.num_micro_batches;
  r["micro_batch_size"] = p.micro_batch_size;
  int rec = 0;
  const planner::StagePlan* fullest = &p.stages.front();
  for (const planner::StagePlan& s : p.stages) {
    rec += s.recompute ? 1 : 0;
    if (s.predicted.memory_bytes > fullest->predicted.memory_bytes) fullest = &s;
  }
  r["recompute_stages"] = rec;
  double iteration_s = p.predicted.iteration_time_s;
  double bubble = p.predicted.bubble_rate;
  int64_t peak = p.predicted.peak_memory_bytes;
  if (e.simulated) {
    iteration_s = static_cast<double>(e.report.iteration_ns) * 1e-9;
    bubble = e.report.bubble_rate;
    peak = e.report.peak_memory_bytes;
  }
  r["iteration_s"] = iteration_s;
  r["throughput_samples_per_s"] = iteration_s > 0 ? static_cast<double>(p.batch) / iteration_s : 0.0;
  r["tflops_per_device"] = iteration_s > 0 ? e.flops_per_iteration / iteration_s / p.num_devices_used / 1e12 : 0.0;
  r["bubble_rate"] = bubble;
  r["peak_memory_bytes"] = peak;
  r["weights_optimizer_bytes"] = fullest->predicted.weights_optimizer_bytes;
  r["activation_bytes"] = fullest->predicted.activation_bytes;
  r["source"] = e.simulated ? "sim" : "planner";
  return r;
}

}  // namespace pw::whatif
