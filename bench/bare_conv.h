// A bare oneDNN 2-D convolution (NCHW, plain layouts, bias) — forward, backward-data and
// backward-weights primitives created once and executed many times on caller buffers — for
// benchmarks that compare the conv2d layer against the library's raw rate in the same run
// (exec/layers/conv.cc creates the same primitives). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>

namespace pw::exec {

class BareConv {
 public:
  BareConv(int64_t batch, int64_t in_c, int64_t out_c, int64_t kernel, int64_t stride, int64_t pad, int64_t h,
           int64_t w);
  ~BareConv();
  // y[batch, out_c, oh, ow] = conv(x, weight[out_c, in_c, k, k]) + bias[out_c]
  void forward(const float* x, const float* weight, const float* bias, float* y);
  void backward_data(const float* dy, const float* weight, float* dx);
  void backward_weights(const float* x, const float* dy, float* dweight, float* dbias);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::exec
