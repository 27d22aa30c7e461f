// Optimizer memory catalog: persistent bytes per parameter for the weights, their gradient
// buffer and the optimizer state.
//
//   name           weights  gradients  state                          total
//   sgd            4        4          0                              8
//   sgd-momentum   4        4          4  (momentum)                  12
//   rmsprop        4        4          4  (mean square)               12   (GPipe, Table 1)
//   adam           4        4          8  (m, v)                      16
//   adam-mixed     2 bf16   4 fp32     12 (fp32 master, m, v)         18   (Adam's 16 + a bf16 copy)
//
// adam-mixed keeps fp32 gradients because a pipeline accumulates them over micro-batches.
// How a Profile carries these (see models/cost.h): parameter_bytes = params * weight_bytes and
// optimizer_bytes = params * (total - 2 * weight_bytes), so that the planner's
// "weights + gradients (same size as the weights) + optimizer state"
// = 2 * parameter_bytes + optimizer_bytes = params * total for every entry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pw::models {

struct OptimizerMemory {
  std::string name;
  double weight_bytes = 0;    // per parameter
  double gradient_bytes = 0;  // per parameter
  double state_bytes = 0;     // per parameter (moments, master copies)
  double total() const { return weight_bytes + gradient_bytes + state_bytes; }
};

const std::vector<OptimizerMemory>& optimizer_catalog();
// Throws InputError("unknown optimizer \"x\" (known: sgd, ...)").
const OptimizerMemory& find_optimizer(std::string_view name);

}  // namespace pw::models
