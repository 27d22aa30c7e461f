// Optimizers over a list of (parameter, gradient) tensor pairs: SGD with momentum and Adam, both
// with weight decay. State (momentum / first and second moments) is sized per parameter and
// allocated from the given memory resource at construction, so memory measurements include it.
// Device: parameters, gradients and that resource may all be on one CUDA device; step() then
// runs the device kernels of the same formulas (exec/device_ops.h; Adam: one launch for all the
// tensors) and the state lives there.
//
// SGD:  v = momentum * v + (g + wd * p);  p -= lr * v          (momentum 0: plain SGD, no state)
// Adam: AdamW-style decoupled decay: m, v moments with bias correction;
//       p -= lr * (m̂ / (sqrt(v̂) + eps) + wd * p)
//
// step() reads the gradient tensors and updates the parameter tensors in place; it does not
// zero the gradients. The tensors are read through the pointers given at construction, so a
// runtime that swaps parameter versions (exec/layer.h) updates whichever version is installed.
// Not thread-safe; one optimizer per set of parameters (e.g. per stage).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/device_ops.h"
#include "exec/tensor.h"
#include "models/optimizer_memory.h"

namespace pw::exec {

enum class OptimizerKind { sgd, adam };
// "sgd" | "adam"; throws InputError naming `flag` otherwise.
OptimizerKind parse_optimizer_kind(const std::string& s, const std::string& flag);
// The learning rate `train` and `run` use when none is given: adam 0.003, sgd (momentum) 0.05.
double default_learning_rate(OptimizerKind kind);

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::sgd;
  double lr = 0.01;
  double momentum = 0.9;  // sgd
  double beta1 = 0.9;     // adam
  double beta2 = 0.999;   // adam
  double eps = 1e-8;      // adam
  double weight_decay = 0.0;
};

// The entry of models/optimizer_memory.h whose bytes per parameter this optimizer holds: adam,
// sgd-momentum (momentum > 0: one state tensor) or sgd (no state).
const models::OptimizerMemory& optimizer_memory(const OptimizerOptions& options);

class Optimizer {
 public:
  // params[i] and grads[i] must have the same shape. Throws InputError for a negative lr,
  // momentum outside [0, 1), betas outside [0, 1) or negative weight decay.
  Optimizer(std::vector<Tensor*> params, std::vector<Tensor*> grads, const OptimizerOptions& options,
            MemoryResource& alloc = Allocator::global());

  void step();
  int64_t steps() const { return steps_; }
  int64_t state_bytes() const;
  const OptimizerOptions& options() const { return opt_; }
  void set_lr(double lr) { opt_.lr = lr; }

  // Checkpoint access (exec/checkpoint.h): the state tensors with stable names ("momentum/<i>"
  // for SGD with momentum, "adam_m/<i>" and "adam_v/<i>" for Adam; i = parameter index), and
  // the step count (Adam's bias correction). Loading writes into these tensors in place.
  std::vector<std::pair<std::string, Tensor*>> state_tensors();
  void set_steps(int64_t steps) { steps_ = steps; }

 private:
  std::vector<Tensor*> params_, grads_;
  OptimizerOptions opt_;
  std::vector<Tensor> m_, v_;
  int64_t steps_ = 0;
  MultiTensorCache fused_;  // the device Adam step's launch table (exec/device_ops.h)
};

}  // namespace pw::exec
