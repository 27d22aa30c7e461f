// CUDA layers: the executable layers of exec/layers/ on one CUDA device, with the same
// contracts (exec/layer.h): inputs, outputs, contexts, parameters and gradients are tensors on
// the device; B and W in either order; recompute bit-identical; parameters read at call time.
//
// Each CUDA layer keeps its CPU twin (the oneDNN layer of the same spec, built by make_layer):
// it validated the spec and shapes, it answers input_shapes(), and init_parameters(seed) runs
// the twin's seeded initialization and uploads it, so a GPU network starts from exactly the
// CPU network's weights. The twin's own buffers stay on the host and are not used afterwards.
//
// Results are queued on the device's compute stream (exec/cuda/cuda_device.h); nothing here
// waits for the device.
#pragma once

#include <memory>
#include <vector>

#include "exec/cuda/cuda_device.h"
#include "exec/layer.h"

namespace pw::exec::cuda {

class CudaLayer : public Layer {
 public:
  // Device copies of the twin's parameters (current values) and zeroed gradients.
  CudaLayer(std::unique_ptr<Layer> twin, CudaDevice& dev);

  int num_inputs() const override { return twin_->num_inputs(); }
  bool is_loss() const override { return twin_->is_loss(); }
  std::vector<std::vector<int64_t>> input_shapes() const override { return twin_->input_shapes(); }
  std::vector<Tensor*> parameters() override;
  std::vector<Tensor*> gradients() override;
  void init_parameters(uint64_t seed) override;

 protected:
  Tensor make(std::vector<int64_t> shape) { return Tensor(std::move(shape), dev_.memory()); }
  void* stream() const { return dev_.stream(); }
  // Throws InputError naming the layer when input `index` is not on this layer's device.
  void check_device(const Tensor& t, size_t index) const;
  // check_input and check_device for every input.
  void check_inputs(Inputs in) const;

  CudaDevice& dev_;
  std::unique_ptr<Layer> twin_;
  std::vector<Tensor> params_, grads_;
};

// The CUDA layer of a spec: its CPU twin from exec::make_layer (which validates), wrapped.
// Throws InputError for a kind the CUDA backend does not run yet, naming it.
std::unique_ptr<Layer> make_cuda_layer(const models::LayerSpec& spec,
                                       const std::vector<std::vector<int64_t>>& input_shapes, CudaDevice& dev);

// The kinds make_cuda_layer runs.
bool has_cuda_layer(models::LayerKind kind);

}  // namespace pw::exec::cuda
