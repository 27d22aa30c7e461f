#include "exec/numerics.h"

#include <cmath>
#include <cstring>

#include "exec/tensor.h"

namespace pw::exec {

bool all_finite(const float* x, int64_t n) {
  // For every float, (bits & exponent mask) + one exponent ulp sets bit 31 exactly when the
  // exponent is all ones (NaN or inf). Integer ops only: the OR reduction vectorizes.
  uint32_t acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, sizeof b);
    acc |= (b & 0x7f800000u) + 0x00800000u;
  }
  return (acc & 0x80000000u) == 0;
}

bool all_finite(const std::vector<Tensor*>& tensors) {
  bool finite = true;
  for (const Tensor* t : tensors) finite = all_finite(t->data(), t->numel()) && finite;
  return finite;
}

std::string nonfinite_kind(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return "NaN";
    if (std::isinf(x[i])) return "Inf";
  }
  return "";
}

NumericalFault::NumericalFault(int64_t step, int stage, std::string layer, std::string quantity, std::string kind)
    : std::runtime_error("step " + std::to_string(step) + ", stage " + std::to_string(stage) + ", layer \"" + layer +
                         "\": " + quantity + " is " + kind),
      step_(step),
      stage_(stage),
      layer_(std::move(layer)),
      quantity_(std::move(quantity)),
      kind_(std::move(kind)) {}

}  // namespace pw::exec
