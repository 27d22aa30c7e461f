#include "exec/runtime/fault_injection.h"

#include <cstdlib>

#include <signal.h>
#include <unistd.h>

#include <limits>
#include <regex>
#include <vector>

#include "exec/device_ops.h"
#include "models/error.h"

namespace pw::exec {

FaultSpec parse_fault_spec(const std::string& spec, const std::string& where) {
  FaultSpec f;
  if (spec.empty()) return f;
  static const std::regex re(R"(^(\d+):((F|B|W|BW)\(\d+,\d+\))(:kill|:nan|:oom)?$)");
  std::smatch m;
  if (!std::regex_match(spec, m, re))
    throw InputError(where + ": expected <rank>:<op>[:kill|:nan|:oom] such as 1:B(1,3), got \"" + spec + "\"");
  f.rank = std::stoi(m[1]);
  f.op = m[2];
  f.kill = m[4] == ":kill";
  f.nan = m[4] == ":nan";
  f.oom = m[4] == ":oom";
  if (f.nan && m[3] != "W" && m[3] != "BW")
    throw InputError(where + ": :nan applies to W or BW ops (they write weight gradients), got \"" + spec + "\"");
  return f;
}

void FaultInjectingCompute::maybe_fail(const char* kind, const OpContext& ctx) {
  if (fired_ || rank_ != spec_.rank) return;
  const std::string label =
      std::string(kind) + "(" + std::to_string(ctx.stage) + "," + std::to_string(ctx.micro_batch) + ")";
  if (label != spec_.op) return;
  fired_ = true;
  if (spec_.kill) ::kill(::getpid(), SIGKILL);
  if (spec_.nan) {
    poison_ = true;
    return;
  }
  if (spec_.oom) throw OutOfMemory("host: out of memory: injected at " + label + " (PW_TEST_INJECT_FAULT)");
  throw InjectedFault("injected fault (PW_TEST_INJECT_FAULT)");
}

void FaultInjectingCompute::maybe_poison(int stage) {
  if (!poison_) return;
  poison_ = false;
  const std::vector<Tensor*> g = inner_.weight_gradients(stage);
  PW_CHECK(!g.empty() && g[0]->numel() > 0,
           "PW_TEST_INJECT_FAULT: stage " + std::to_string(stage) + " has no weight gradient");
  Tensor& t = *g[0];
  if (t.device().is_cpu()) {
    t.data()[0] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  std::vector<float> host(static_cast<size_t>(t.numel()));  // a stage on a GPU: through the host
  copy_to_host(t, host.data());
  host[0] = std::numeric_limits<float>::quiet_NaN();
  copy_from_host(host.data(), t);
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
  maybe_poison(ctx.stage);
}

std::vector<Tensor> FaultInjectingCompute::backward(const OpContext& ctx, std::vector<Tensor> grad_output) {
  maybe_fail("BW", ctx);
  std::vector<Tensor> g = inner_.backward(ctx, std::move(grad_output));
  maybe_poison(ctx.stage);
  return g;
}

int pause_step_from_env(const char* var) {
  const char* v = std::getenv(var);
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > 1000000000)
    throw InputError(std::string(var) + ": expected a step number >= 1, got \"" + v + "\"");
  return static_cast<int>(n);
}

}  // namespace pw::exec
