#include "exec/runtime/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <regex>

#include "models/error.h"

namespace pw::exec {

FaultSpec parse_fault_spec(const std::string& spec, const std::string& where) {
  FaultSpec f;
  if (spec.empty()) return f;
  static const std::regex re(R"(^(\d+):((F|B|W|BW)\(\d+,\d+\))(:kill)?$)");
  std::smatch m;
  if (!std::regex_match(spec, m, re))
    throw InputError(where + ": expected <rank>:<op>[:kill] such as 1:B(1,3), got \"" + spec + "\"");
  f.rank = std::stoi(m[1]);
  f.op = m[2];
  f.kill = m[4].matched;
  return f;
}

void FaultInjectingCompute::maybe_fail(const char* kind, const OpContext& ctx) {
  if (fired_ || rank_ != spec_.rank) return;
  const std::string label = std::string(kind) + "(" + std::to_string(ctx.stage) + "," + std::to_string(ctx.micro_batch) + ")";
  if (label != spec_.op) return;
  fired_ = true;
  if (spec_.kill) ::kill(::getpid(), SIGKILL);
  throw InjectedFault("injected fault (PW_TEST_INJECT_FAULT)");
}

std::vector<Tensor> FaultInjectingCompute::forward(const OpContext& ctx, std::vector<Tensor> input) {
  maybe_fail("F", ctx);
  return inner_.forward(ctx, std::move(input));
}

std::vector<Tensor> FaultInjectingCompute::backward_input(const OpContext& ctx, std::vector<Tensor> grad_output) {
  maybe_fail("B", ctx);
  return inner_.backward_input(ctx, std::move(grad_output));
}

void FaultInjectingCompute::backward_weight(const OpContext& ctx) {
  maybe_fail("W", ctx);
  inner_.backward_weight(ctx);
}

std::vector<Tensor> FaultInjectingCompute::backward(const OpContext& ctx, std::vector<Tensor> grad_output) {
  maybe_fail("BW", ctx);
  return inner_.backward(ctx, std::move(grad_output));
}

}  // namespace pw::exec
