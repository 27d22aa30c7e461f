// The device dispatch of exec/device_ops.h: host code for host tensors, the CUDA backend's
// kernels (exec/cuda/, only where the build has it) for tensors on a CUDA device.
#include "exec/device_ops.h"

#include <cstring>

#include "exec/layer.h"
#include "exec/layers/common.h"
#include "exec/numerics.h"
#include "models/error.h"

#ifdef PW_HAVE_CUDA
#include "exec/cuda/cuda_device.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/multi_tensor.h"
#include "exec/cuda/train_kernels.h"
#endif

namespace pw::exec {

namespace {

#ifdef PW_HAVE_CUDA
// The CUDA device of `d`; throws InputError naming `d` and why where it cannot be used.
cuda::CudaDevice& cuda_device(Device d) {
  if (const std::string why = unusable_reason(d); !why.empty())
    throw InputError("device " + d.to_string() + ": " + why);
  return cuda::CudaDevice::get(d.index, d.stream);
}

// The compute stream a CUDA tensor is ordered on (its resource's, exec/cuda/caching_allocator.h).
void* stream_of(const Tensor& t) {
  auto* m = dynamic_cast<cuda::StreamMemory*>(t.resource());
  PW_CHECK(m != nullptr, "tensor " + t.shape_string() + " on " + t.device().to_string() + " is not a CUDA tensor");
  return m->stream();
}
#else
[[noreturn]] void no_backend(Device d) { throw InputError("device " + d.to_string() + ": " + unusable_reason(d)); }
#endif

}  // namespace

MemoryResource& device_memory(Device device) {
  if (device.is_cpu()) return Allocator::global();
#ifdef PW_HAVE_CUDA
  return cuda_device(device).memory();
#else
  no_backend(device);
#endif
}

int64_t device_total_memory_bytes(Device device) {
  PW_CHECK(!device.is_cpu(), "device_total_memory_bytes: the host's memory is memory_bound's");
#ifdef PW_HAVE_CUDA
  return cuda_device(device).total_memory_bytes();
#else
  no_backend(device);
#endif
}

Tensor copy_to_device(const Tensor& t, Device device) {
  if (!t.device().is_cpu()) {
    Tensor host(t.shape());
    copy_to_host(t, host.data());
    return device.is_cpu() ? std::move(host) : copy_to_device(host, device);
  }
  if (device.is_cpu()) return t.clone();
#ifdef PW_HAVE_CUDA
  return cuda::to_device(t, cuda_device(device));
#else
  no_backend(device);
#endif
}

void copy_to_host(const Tensor& t, float* host) {
  if (t.device().is_cpu()) {
    std::memcpy(host, t.data(), static_cast<size_t>(t.bytes()));
    return;
  }
#ifdef PW_HAVE_CUDA
  cuda::download(t, host);
#else
  no_backend(t.device());
#endif
}

void copy_from_host(const float* host, Tensor& t) {
  if (t.device().is_cpu()) {
    std::memcpy(t.data(), host, static_cast<size_t>(t.bytes()));
    return;
  }
#ifdef PW_HAVE_CUDA
  cuda::upload(host, t);
#else
  no_backend(t.device());
#endif
}

void accumulate(Tensor& y, const Tensor& x) {
  PW_CHECK(y.device() == x.device() && y.numel() == x.numel(), "accumulate: tensors of different devices or sizes");
  if (y.device().is_cpu()) {
    add_into(y.data(), x.data(), y.numel());
    return;
  }
#ifdef PW_HAVE_CUDA
  cuda::kernels::add_into(y.data(), x.data(), y.numel(), stream_of(y));
#else
  no_backend(y.device());
#endif
}

std::vector<bool> finite_flags(const std::vector<Tensor*>& tensors) {
  std::vector<bool> ok(tensors.size(), true);
  if (tensors.empty()) return ok;
  const Device d = tensors.front()->device();
  for (const Tensor* t : tensors) PW_CHECK(t->device() == d, "finite_flags: tensors on different devices");
  if (d.is_cpu()) {
    for (size_t i = 0; i < tensors.size(); ++i) ok[i] = all_finite(tensors[i]->data(), tensors[i]->numel());
    return ok;
  }
#ifdef PW_HAVE_CUDA
  cuda::CudaDevice& dev = cuda_device(d);
  Tensor flags = Tensor::zeros({static_cast<int64_t>(tensors.size())}, dev.memory());
  for (size_t i = 0; i < tensors.size(); ++i)
    cuda::kernels::mark_nonfinite(tensors[i]->data(), tensors[i]->numel(), flags.data() + i, dev.stream());
  std::vector<float> host(tensors.size());
  cuda::download(flags, host.data());
  for (size_t i = 0; i < tensors.size(); ++i) ok[i] = host[i] == 0.0f;
  return ok;
#else
  no_backend(d);
#endif
}

std::string nonfinite_kind(const Tensor& t) {
  if (t.device().is_cpu()) return nonfinite_kind(t.data(), t.numel());
  std::vector<float> host(static_cast<size_t>(t.numel()));
  copy_to_host(t, host.data());
  return nonfinite_kind(host.data(), t.numel());
}

void device_sgd_step(Tensor& p, const Tensor& g, Tensor* momentum, float lr, float mu, float wd) {
  PW_CHECK(!p.device().is_cpu() && g.device() == p.device() && g.numel() == p.numel() &&
               (!momentum || (momentum->device() == p.device() && momentum->numel() == p.numel())),
           "device_sgd_step: tensors of different devices or sizes, or on the host");
#ifdef PW_HAVE_CUDA
  cuda::kernels::sgd_step(p.data(), g.data(), momentum ? momentum->data() : nullptr, p.numel(), lr, mu, wd,
                          stream_of(p));
#else
  no_backend(p.device());
#endif
}

void device_adam_step(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, float lr, float b1, float b2, float c1,
                      float c2, float eps, float wd) {
  PW_CHECK(!p.device().is_cpu() && g.device() == p.device() && m.device() == p.device() && v.device() == p.device() &&
               g.numel() == p.numel() && m.numel() == p.numel() && v.numel() == p.numel(),
           "device_adam_step: tensors of different devices or sizes, or on the host");
#ifdef PW_HAVE_CUDA
  cuda::kernels::adam_step(p.data(), g.data(), m.data(), v.data(), p.numel(), lr, b1, b2, c1, c2, eps, wd,
                           stream_of(p));
#else
  no_backend(p.device());
#endif
}

void device_adam_step_all(const std::vector<Tensor*>& p, const std::vector<Tensor*>& g, std::vector<Tensor>& m,
                          std::vector<Tensor>& v, float lr, float b1, float b2, float c1, float c2, float eps, float wd,
                          MultiTensorCache& cache) {
  PW_CHECK(g.size() == p.size() && m.size() == p.size() && v.size() == p.size(),
           "device_adam_step_all: lists of different lengths");
  if (p.empty()) return;
  const Device d = p.front()->device();
  for (size_t i = 0; i < p.size(); ++i)
    PW_CHECK(!d.is_cpu() && p[i]->device() == d && g[i]->device() == d && m[i].device() == d && v[i].device() == d &&
                 g[i]->numel() == p[i]->numel() && m[i].numel() == p[i]->numel() && v[i].numel() == p[i]->numel(),
             "device_adam_step_all: tensors of different devices or sizes, or on the host");
#ifdef PW_HAVE_CUDA
  cuda::CudaDevice& dev = cuda_device(d);
  std::vector<int64_t> sizes;
  std::vector<std::array<const void*, cuda::kAddresses>> addresses;
  for (size_t i = 0; i < p.size(); ++i) {
    sizes.push_back(p[i]->numel());
    addresses.push_back({p[i]->data(), g[i]->data(), m[i].data(), v[i].data()});
  }
  const cuda::MultiTensorPlan plan = cuda::plan_multi_tensor(sizes);
  std::vector<int64_t> words = cuda::multi_tensor_table(addresses, plan);
  if (words != cache.words || cache.table.empty() || cache.table.device() != d) {
    // int64 words travel as pairs of floats' bytes (a float tensor of twice the words).
    Tensor table({static_cast<int64_t>(words.size()) * 2}, dev.memory());
    cuda::upload(reinterpret_cast<const float*>(words.data()), table);
    cache.table = std::move(table);
    cache.words = std::move(words);
    cache.tensors = static_cast<int64_t>(p.size());
    cache.launches.clear();
    for (const cuda::MultiTensorLaunch& l : plan.launches) cache.launches.emplace_back(l.first_block, l.blocks);
  }
  const auto* table = reinterpret_cast<const int64_t*>(cache.table.data());
  for (const auto& [first, blocks] : cache.launches)
    cuda::kernels::adam_step_multi(table, cache.tensors, first, blocks, lr, b1, b2, c1, c2, eps, wd, dev.stream());
#else
  no_backend(d);
#endif
}

void set_tf32(Device device, bool on) {
  if (device.is_cpu()) throw InputError("TF32 matrix products need a CUDA device (the host computes in fp32)");
#ifdef PW_HAVE_CUDA
  cuda_device(device).set_tf32(on);
#else
  no_backend(device);
#endif
}

}  // namespace pw::exec
