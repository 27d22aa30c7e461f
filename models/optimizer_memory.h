// The optimizer vocabulary of every command, one table: each name, what it means, its
// persistent bytes per parameter (weights, their gradient buffer, the optimizer state), and
// whether the CPU executor (exec/optimizer.h: SGD with or without momentum, Adam) trains with it.
// `plan` and `whatif` accept every name (they size memory); `train` and `run` only those the
// executor trains.
//
//   name           weights  gradients  state                          total  CPU executor
//   sgd            4        4          0                              8      yes (momentum 0)
//   sgd-momentum   4        4          4  (momentum)                  12     yes (momentum 0.9)
//   rmsprop        4        4          4  (mean square)               12     no   (GPipe, Table 1)
//   adam           4        4          8  (m, v)                      16     yes
//   adam-mixed     2 bf16   4 fp32     12 (fp32 master, m, v)         18     no   (Adam's 16 + a bf16 copy)
//
// adam-mixed keeps fp32 gradients because a pipeline accumulates them over micro-batches.
// How a Profile carries these (see models/cost.h): parameter_bytes = params * weight_bytes and
// optimizer_bytes = params * (total - 2 * weight_bytes), so that the planner's
// "weights + gradients (same size as the weights) + optimizer state"
// = 2 * parameter_bytes + optimizer_bytes = params * total for every entry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/layer_graph.h"

namespace pw::models {

struct OptimizerMemory {
  std::string name;
  double weight_bytes = 0;    // per parameter
  double gradient_bytes = 0;  // per parameter
  double state_bytes = 0;     // per parameter (moments, master copies)
  std::string meaning;        // one line for help texts and messages
  bool cpu_executor = false;  // exec/optimizer.h trains with it
  double total() const { return weight_bytes + gradient_bytes + state_bytes; }
};

const std::vector<OptimizerMemory>& optimizer_catalog();
// Throws InputError("unknown optimizer \"x\" (known: sgd, ...)").
const OptimizerMemory& find_optimizer(std::string_view name);

// The names joined by `separator` ("sgd | sgd-momentum | ..." for a help text); only those the
// CPU executor trains when `cpu_executor_only`.
std::string optimizer_names(std::string_view separator, bool cpu_executor_only = false);
// find_optimizer for a command that trains on the CPU executor: InputError("<flag>: ...")
// naming the unknown name or the optimizer it cannot train, with the names it trains.
const OptimizerMemory& find_cpu_trainable_optimizer(std::string_view name, const std::string& flag);

// Estimated peak bytes of training `model` in fp32 with `optimizer` at `micro_batch` samples
// (values < 1 count as 1) with `in_flight` micro-batches alive at once (values < 1 count as 1):
// parameters x optimizer.total() (weights, gradients, optimizer state), plus the stashed
// activations and outputs of every micro-batch in flight, plus the largest transient workspace
// of one layer. A lower bound: layers without an analytic cost (opaque, imported) count 0.
// Pure; throws nothing for a model whose layers were validated when it was read.
double estimated_training_bytes(const Model& model, const OptimizerMemory& optimizer, int64_t micro_batch,
                                int64_t in_flight);

}  // namespace pw::models
