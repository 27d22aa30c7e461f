// Test-only fault injection for MPI runs (the fault tests of tests/exec/runtime/mpi_fault_*).
//
// A FaultSpec "<rank>:<op>[:kill|:nan|:oom]" (e.g. "1:B(1,3)", "0:F(0,2):kill") names a rank and a
// compute op as planner::op_label writes it (F, B, W, BW with (stage,micro_batch)). The
// FaultInjectingCompute wraps the rank's StageCompute and, the first time that op starts on
// that rank, throws InjectedFault — or, with ":kill", sends SIGKILL to its own process (as if
// the rank were killed from outside), or with ":nan" (W, BW only) runs the op and then sets the
// first value of the stage's first weight gradient to NaN (so the stage's step finds it and
// throws NumericalFault), or with ":oom" throws pw::OutOfMemory as an allocation that found no
// memory does. Other ranks and ops pass straight through.
// `pipewright run` takes the spec from the environment variable PW_TEST_INJECT_FAULT (unset
// in normal use); the parse error is an InputError naming that variable.
#pragma once

#include <stdexcept>
#include <string>

#include "exec/runtime/stage_compute.h"

namespace pw::exec {

struct FaultSpec {
  int rank = -1;   // -1: no fault
  std::string op;  // "B(1,3)"
  bool kill = false;
  bool nan = false;
  bool oom = false;
};

FaultSpec parse_fault_spec(const std::string& spec, const std::string& where);

// PW_TEST_PAUSE_AT_STEP=K (signal tests, `pipewright run` under mpirun): after the ops of step K
// (1-based, warm-up included) every rank waits until one of them has a stop request (at most a
// minute; rank 0 first prints "test: paused at step K" on stderr), then the step's agreement
// runs as usual, so a signal sent during the pause stops the job at step K exactly
// (exec/runtime/run_ranks.cc). Returns 0 when `var` is unset or empty; InputError naming it
// when it is not an integer >= 1.
int pause_step_from_env(const char* var);

class InjectedFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FaultInjectingCompute final : public StageCompute {
 public:
  FaultInjectingCompute(StageCompute& inner, FaultSpec spec, int rank)
      : inner_(inner), spec_(std::move(spec)), rank_(rank) {}

  int num_stages() const override { return inner_.num_stages(); }
  std::vector<Tensor> forward(const OpContext& ctx, std::vector<Tensor> input) override;
  std::vector<Tensor> backward_input(const OpContext& ctx, std::vector<Tensor> grad_output) override;
  void backward_weight(const OpContext& ctx) override;
  std::vector<Tensor> backward(const OpContext& ctx, std::vector<Tensor> grad_output) override;
  void step(int stage, int iteration) override { inner_.step(stage, iteration); }
  int64_t weight_version(int stage) const override { return inner_.weight_version(stage); }
  int64_t memory_bytes(int stage) const override { return inner_.memory_bytes(stage); }
  std::vector<Tensor*> weight_gradients(int stage) override { return inner_.weight_gradients(stage); }

 private:
  void maybe_fail(const char* kind, const OpContext& ctx);
  void maybe_poison(int stage);
  StageCompute& inner_;
  FaultSpec spec_;
  int rank_;
  bool fired_ = false;
  bool poison_ = false;
};

}  // namespace pw::exec
