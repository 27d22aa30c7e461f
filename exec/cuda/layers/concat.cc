#include "exec/cuda/cnn_kernels.h"
#include "exec/cuda/layers/cnn_layers.h"
#include "models/error.h"

namespace pw::exec::cuda {

CudaConcat::CudaConcat(std::unique_ptr<Layer> twin, CudaDevice& dev, std::vector<std::vector<int64_t>> in_shapes)
    : CudaLayer(std::move(twin), dev) {
  out_shape_ = in_shapes.at(0);
  out_shape_[0] = 0;
  for (const auto& s : in_shapes) {
    out_shape_[0] += s.at(0);
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    in_elems_.push_back(n);
    out_elems_ += n;
  }
}

Tensor CudaConcat::forward(Inputs in, Context& ctx) {
  ctx.clear();
  check_inputs(in);
  const int64_t batch = in[0]->dim(0);
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k]->dim(0) != batch) throw InputError("layer \"" + name() + "\": inputs have different batch sizes");
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), out_shape_.begin(), out_shape_.end());
  Tensor y = make(shape);
  int64_t offset = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    kernels::copy_rows(in[k]->data(), in_elems_[k], y.data() + offset, out_elems_, batch, in_elems_[k], stream());
    offset += in_elems_[k];
  }
  ctx.batch = batch;
  return y;
}

std::vector<Tensor> CudaConcat::backward_input(Inputs in, Context&, const Tensor& grad_out) {
  const int64_t batch = grad_out.dim(0);
  std::vector<Tensor> r;
  int64_t offset = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    Tensor dx = make(in[k]->shape());
    kernels::copy_rows(grad_out.data() + offset, out_elems_, dx.data(), in_elems_[k], batch, in_elems_[k], stream());
    offset += in_elems_[k];
    r.push_back(std::move(dx));
  }
  return r;
}

}  // namespace pw::exec::cuda
