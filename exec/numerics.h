// Numerical-fault detection for training: a cheap finite check over fp32 buffers and the
// exception a run stops with when a loss, a gradient or a weight is NaN or infinite.
//
// all_finite() reads only the exponent bits (integer AND/ADD/OR, no floating-point
// reduction), so it vectorizes without -ffast-math and runs at memory bandwidth; its cost per
// step is measured by BM_FiniteCheck in bench/exec_bench.cc (figures in bench/RESULTS.md).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pw::exec {

class Tensor;

// True when none of x[0, n) is NaN or +-inf.
bool all_finite(const float* x, int64_t n);
// True when every tensor's values are (each tensor read once, whatever the result).
bool all_finite(const std::vector<Tensor*>& tensors);
// "NaN" or "Inf": the kind of the first non-finite value in x[0, n) ("" when all are finite).
std::string nonfinite_kind(const float* x, int64_t n);

// A NaN or Inf in training: names the step (1-based, counted over the whole run, resumed
// steps included), the stage (0 for single-device training), the layer and what was not
// finite ("loss", "weight gradient", "weights after the update"). The CLI exits 4 with what().
class NumericalFault : public std::runtime_error {
 public:
  NumericalFault(int64_t step, int stage, std::string layer, std::string quantity, std::string kind);
  int64_t step() const { return step_; }
  int stage() const { return stage_; }
  const std::string& layer() const { return layer_; }
  const std::string& quantity() const { return quantity_; }
  const std::string& kind() const { return kind_; }
  // The same fault with the step moved by `offset` (a runtime counts its own iterations from 0).
  NumericalFault shifted(int64_t offset) const {
    return NumericalFault(step_ + offset, stage_, layer_, quantity_, kind_);
  }

 private:
  int64_t step_;
  int stage_;
  std::string layer_, quantity_, kind_;
};

}  // namespace pw::exec
