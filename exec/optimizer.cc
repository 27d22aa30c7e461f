#include "exec/optimizer.h"

#include <cmath>

#include "exec/device_ops.h"
#include "exec/optimizer_update.h"
#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

OptimizerKind parse_optimizer_kind(const std::string& s, const std::string& flag) {
  if (s == "sgd") return OptimizerKind::sgd;
  if (s == "adam") return OptimizerKind::adam;
  throw InputError(flag + ": unknown optimizer \"" + s + "\" (expected sgd or adam)");
}

double default_learning_rate(OptimizerKind kind) { return kind == OptimizerKind::adam ? 3e-3 : 0.05; }

const models::OptimizerMemory& optimizer_memory(const OptimizerOptions& options) {
  if (options.kind == OptimizerKind::adam) return models::find_optimizer("adam");
  return models::find_optimizer(options.momentum > 0 ? "sgd-momentum" : "sgd");
}

Optimizer::Optimizer(std::vector<Tensor*> params, std::vector<Tensor*> grads, const OptimizerOptions& options,
                     MemoryResource& alloc)
    : params_(std::move(params)), grads_(std::move(grads)), opt_(options) {
  PW_CHECK(params_.size() == grads_.size(), "one gradient per parameter expected");
  if (!(opt_.lr >= 0) || !std::isfinite(opt_.lr)) throw InputError("--lr: expected a finite value >= 0");
  if (!(opt_.momentum >= 0 && opt_.momentum < 1)) throw InputError("momentum: expected a value in [0, 1)");
  if (!(opt_.beta1 >= 0 && opt_.beta1 < 1 && opt_.beta2 >= 0 && opt_.beta2 < 1))
    throw InputError("adam betas: expected values in [0, 1)");
  if (!(opt_.weight_decay >= 0)) throw InputError("weight decay: expected a value >= 0");
  for (size_t i = 0; i < params_.size(); ++i) {
    PW_CHECK(params_[i]->shape() == grads_[i]->shape(), "parameter and gradient shapes differ");
    PW_CHECK(params_[i]->device() == alloc.device() && grads_[i]->device() == alloc.device(),
             "parameters, gradients and optimizer state on different devices");
    const bool first = opt_.kind == OptimizerKind::adam || opt_.momentum > 0;
    if (first) m_.push_back(Tensor::zeros(params_[i]->shape(), alloc));
    if (opt_.kind == OptimizerKind::adam) v_.push_back(Tensor::zeros(params_[i]->shape(), alloc));
  }
}

int64_t Optimizer::state_bytes() const {
  int64_t b = 0;
  for (const Tensor& t : m_) b += t.bytes();
  for (const Tensor& t : v_) b += t.bytes();
  return b;
}

std::vector<std::pair<std::string, Tensor*>> Optimizer::state_tensors() {
  std::vector<std::pair<std::string, Tensor*>> out;
  const bool adam = opt_.kind == OptimizerKind::adam;
  for (size_t i = 0; i < m_.size(); ++i) out.emplace_back((adam ? "adam_m/" : "momentum/") + std::to_string(i), &m_[i]);
  for (size_t i = 0; i < v_.size(); ++i) out.emplace_back("adam_v/" + std::to_string(i), &v_[i]);
  return out;
}

void Optimizer::step() {
  ++steps_;
  const float lr = static_cast<float>(opt_.lr);
  const float wd = static_cast<float>(opt_.weight_decay);
  const float mu = static_cast<float>(opt_.momentum);
  const float b1 = static_cast<float>(opt_.beta1), b2 = static_cast<float>(opt_.beta2);
  const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(opt_.beta1, double(steps_))));
  const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(opt_.beta2, double(steps_))));
  const float eps = static_cast<float>(opt_.eps);
  // On a device, Adam updates every tensor in one launch (the same per-element formula).
  if (!params_.empty() && !params_.front()->device().is_cpu() && opt_.kind == OptimizerKind::adam) {
    device_adam_step_all(params_, grads_, m_, v_, lr, b1, b2, c1, c2, eps, wd, fused_);
    return;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i]->device().is_cpu()) {
      if (opt_.kind == OptimizerKind::sgd)
        device_sgd_step(*params_[i], *grads_[i], m_.empty() ? nullptr : &m_[i], lr, mu, wd);
      else device_adam_step(*params_[i], *grads_[i], m_[i], v_[i], lr, b1, b2, c1, c2, eps, wd);
      continue;
    }
    float* p = params_[i]->data();
    const float* g = grads_[i]->data();
    const int64_t n = params_[i]->numel();
    if (opt_.kind == OptimizerKind::sgd) {
      float* v = m_.empty() ? nullptr : m_[i].data();
      parallel_for(
          n,
          [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) sgd_update(p[k], g[k], v ? v + k : nullptr, lr, mu, wd);
          },
          4096);
    } else {
      float* m = m_[i].data();
      float* v = v_[i].data();
      parallel_for(
          n,
          [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) adam_update(p[k], g[k], m[k], v[k], lr, b1, b2, c1, c2, eps, wd);
          },
          4096);
    }
  }
}

}  // namespace pw::exec
