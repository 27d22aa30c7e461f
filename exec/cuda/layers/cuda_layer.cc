#include "exec/cuda/layers/cuda_layer.h"

#include "models/error.h"

namespace pw::exec::cuda {

CudaLayer::CudaLayer(std::unique_ptr<Layer> twin, CudaDevice& dev)
    : Layer(twin->spec()), dev_(dev), twin_(std::move(twin)) {
  for (Tensor* p : twin_->parameters()) {
    params_.push_back(make(p->shape()));
    upload(p->data(), params_.back());
    grads_.push_back(make(p->shape()));
    grads_.back().fill(0.0f);
  }
}

std::vector<Tensor*> CudaLayer::parameters() {
  std::vector<Tensor*> p;
  for (Tensor& t : params_) p.push_back(&t);
  return p;
}

std::vector<Tensor*> CudaLayer::gradients() {
  std::vector<Tensor*> g;
  for (Tensor& t : grads_) g.push_back(&t);
  return g;
}

void CudaLayer::init_parameters(uint64_t seed) {
  twin_->init_parameters(seed);
  const std::vector<Tensor*> host = twin_->parameters();
  PW_CHECK(host.size() == params_.size(), "CUDA layer and its twin differ in parameters");
  for (size_t i = 0; i < host.size(); ++i) upload(host[i]->data(), params_[i]);
}

void CudaLayer::check_device(const Tensor& t, size_t index) const {
  if (t.device() != dev_.device())
    throw InputError("layer \"" + name() + "\": input " + std::to_string(index) + " is on " + t.device().to_string() +
                     ", expected " + dev_.device().to_string());
}

void CudaLayer::check_inputs(Inputs in) const {
  for (size_t i = 0; i < in.size(); ++i) {
    check_input(*in[i], i);
    check_device(*in[i], i);
  }
}

}  // namespace pw::exec::cuda
