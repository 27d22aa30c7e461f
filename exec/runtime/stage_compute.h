// StageCompute: the computation the pipeline runtime drives, one call per schedule op.
//
// The runtime (exec/pipeline_runtime.h) owns ordering, communication and timing; a
// StageCompute owns the numbers: layers, stashed activations, weight versions, optimizers.
// Payloads are the tensors crossing a cut between virtual stage s and s+1, in an order both
// sides agree on (forward: what s+1.. need from s and before; backward: their gradients).
//
// Call protocol for one iteration (mini-batch), per virtual stage s and micro-batch j:
//   forward(ctx, in)            in: payload from s-1 (empty for s == 0); returns the payload
//                               for s+1 (empty for the last stage).
//   backward_input(ctx, grad)   B. grad: payload from s+1 (empty for the last stage, which
//                               starts from its loss); returns the payload for s-1 (empty for
//                               s == 0). Requires forward(s, j) first.
//   backward_weight(ctx)        W. Accumulates weight gradients; requires B(s, j) first.
//   backward(ctx, grad)         BW = B then W.
//   step(s, iteration)          applies the accumulated gradients of stage s, clears them.
//                               Synchronous schedules: once per iteration after all backwards.
//                               Asynchronous (PipeDream): after every backward (W or BW).
// OpContext::grads_done (may be null; the runtime sets it for the backward that completes a
// replicated stage's gradients, to start their all-reduce bucket by bucket): backward and
// backward_weight call (*grads_done)(k) between layers, after each layer's weight-gradient
// contribution, with k = the number of weight_gradients(stage) tensors this call may still
// write: tensors [k, end) are no longer written by this call (k never increases; a compute
// that never calls it is correct, just not overlapped). The callee may read and write tensors
// [k, end) before the call returns, so the compute must not touch them after reporting them
// (listing a tensor shared by several layers under the earliest of them, which the backward
// reaches last, satisfies this). It must not call into the compute.
// OpContext::weight_version is -1 unless the runtime runs PipeDream vertical sync: then it is
// the version stage 0 returned from weight_version(0) when it ran F(0, j), and every stage
// must run (s, j)'s forward and backward on that version of its own weights.
//
// Replicated stages: the runtime gives every replica its own StageCompute (its own weights,
// gradients, optimizer state); replicas exchange gradients through the transport only.
// Thread-safety: all calls for one stage come from one thread (the worker of the stage's
// device); calls for different stages may run concurrently, so per-stage state must not be
// shared without synchronization. Exceptions thrown by a call abort the iteration: the
// runtime cancels every worker and rethrows the first error from run_iteration().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "exec/tensor.h"
#include "models/error.h"

namespace pw::exec {

struct OpContext {
  int iteration = 0;
  int stage = 0;
  int micro_batch = 0;
  int64_t weight_version = -1;
  const std::function<void(size_t)>* grads_done = nullptr;
};

class StageCompute {
 public:
  virtual ~StageCompute() = default;

  virtual int num_stages() const = 0;
  virtual std::vector<Tensor> forward(const OpContext& ctx, std::vector<Tensor> input) = 0;
  virtual std::vector<Tensor> backward_input(const OpContext& ctx, std::vector<Tensor> grad_output) = 0;
  virtual void backward_weight(const OpContext& ctx) = 0;
  virtual std::vector<Tensor> backward(const OpContext& ctx, std::vector<Tensor> grad_output) {
    std::vector<Tensor> g = backward_input(ctx, std::move(grad_output));
    backward_weight(ctx);
    return g;
  }
  virtual void step(int stage, int iteration) = 0;

  // Current weight version of `stage` (number of steps applied so far); used for vertical sync.
  virtual int64_t weight_version(int stage) const { return -1; }
  // The stage's accumulated weight gradients, in an order every replica of the stage agrees on
  // (the runtime all-reduces them among a replicated stage's replicas between the backwards
  // and step). Computes that do not support replicated stages throw InputError (the default).
  virtual std::vector<Tensor*> weight_gradients(int stage);
  // Bytes the stage holds now (weights, gradients, optimizer state, stashed activations and
  // weight versions), sampled into the trace after each op; -1 when not tracked.
  virtual int64_t memory_bytes(int stage) const { return -1; }
};

inline std::vector<Tensor*> StageCompute::weight_gradients(int stage) {
  throw InputError("stage " + std::to_string(stage) + ": this computation does not support replicated stages");
}

}  // namespace pw::exec
