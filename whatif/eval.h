// Evaluating one what-if configuration: build the model (models/zoo), its analytic profile on
// the device kind (models/cost), the cluster, ask the planner for a plan (planner/planner.h)
// and, optionally, simulate the plan (sim/engine.h).
//
// Cluster: `devices` devices of kind `device`; up to `devices_per_node` of them form a node
// joined by `intra_node`; larger counts must be a multiple of devices_per_node and the nodes
// are joined by `interconnect`. With free_transfers, one level with latency 0 and a bandwidth
// of 1e30 B/s. Memory per device = the catalog's memory_bytes.
//
// Profile: models::default_analytic_profile, the one `plan --model` prices with (micro-batch 1,
// the planner scaling times and activations linearly in samples; per-size points on CPU
// devices), with the config's efficiency, precision and optimizer (whatif_bf16, whatif_optimizer).
//
// FLOPs per iteration (Megatron-LM's convention, "model FLOPs" with re-materialization): the
// matrix products only (linear, attention, transformer_block, lm_head, conv2d; elementwise
// layers are not counted), forward + backward (B + W) for every sample of the batch, plus one
// more forward of every such layer in a re-materializing stage except lm_head (the logits are
// consumed by the loss at once, never dropped). For Megatron's GPT with full
// re-materialization this is exactly 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)).
//
// All functions are pure and safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/cluster.h"
#include "models/layer_graph.h"
#include "models/profile.h"
#include "models/zoo.h"
#include "planner/planner.h"
#include "sim/report.h"
#include "whatif/config.h"

namespace pw::whatif {

models::ZooOptions zoo_options(const WhatifConfig& c);
models::Model build_whatif_model(const WhatifConfig& c);
// Throws InputError when devices > devices_per_node is not a multiple of it.
models::Cluster build_whatif_cluster(const WhatifConfig& c);
models::Profile build_whatif_profile(const models::Model& model, const WhatifConfig& c);
planner::PlanRequest whatif_plan_request(const WhatifConfig& c);

// Persistent bytes (weights + gradients + optimizer state) per byte of Profile parameter_bytes
// under the config's optimizer: total / weight_bytes (see models/optimizer_memory.h).
double persistent_per_parameter_byte(const std::string& optimizer);

// Matmul FLOPs of one iteration (see the header comment); `plan` gives the batch and the
// re-materializing stages (stage ranges index the model's layers).
double flops_per_iteration(const models::Model& model, const planner::Plan& plan);

struct WhatifEvaluation {
  bool feasible = false;
  std::string reason;  // why not, when infeasible
  int64_t parameters = 0;
  planner::PlanOutcome outcome;
  double flops_per_iteration = 0;  // 0 when infeasible
  bool simulated = false;
  sim::Report report;  // when simulated
};

struct EvalOptions {
  bool simulate = true;
  // Simulated back to back; for more than 1 the steady period is reported. 1, as `plan` and
  // `simulate --plan` predict (one iteration, flush included): the same answer from each.
  int iterations = 1;
  // When set, used instead of the analytic profile (a measured or imported profile); the
  // config's model settings then only label the row.
  const models::Profile* profile = nullptr;
  const models::Model* model = nullptr;  // with `profile`: for FLOPs and parameters (optional)
  // Answer "infeasible" without calling the planner when the weights, gradients and optimizer
  // state of the whole model exceed the memory of all devices together (no partition can fit;
  // saves the planner's costly infeasibility diagnosis). min_memory_bytes_to_fit is then 0
  // (unknown). find_max_model turns this off so that every probe is a planner call.
  bool prescreen = true;
  // Always partition with the planner's DP, also where the exact fast solver for repeated
  // layers applies (planner/uniform_sync.h); tests and benchmarks compare the two.
  bool exact_partitioning = false;
};

// InputError for bad settings; an infeasible plan is a normal result.
WhatifEvaluation evaluate_whatif(const WhatifConfig& c, const EvalOptions& options = {});

// The result columns of a sweep row, and the row of an evaluation:
//   feasible, reason, parameters, stages, micro_batches_used, micro_batch_size,
//   recompute_stages, iteration_s, throughput_samples_per_s, tflops_per_device, bubble_rate,
//   peak_memory_bytes, weights_optimizer_bytes, activation_bytes, min_memory_bytes_to_fit,
//   source ("sim" or "planner": where iteration time, bubble and peak memory come from).
// weights_optimizer_bytes / activation_bytes are those of the fullest device.
const std::vector<std::string>& whatif_result_columns();
Json whatif_result_row(const WhatifEvaluation& e);

}  // namespace pw::whatif
