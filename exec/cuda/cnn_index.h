// Index math of the CUDA CNN kernels (conv_kernels.cu, pool_kernels.cu), shared with the host
// code that plans them and with the host tests, so it is written (and tested) once. Pure
// functions of integers; no CUDA header needed outside nvcc.
//
// Windows along one axis (a convolution's or a pooling's): output position o reads input
// positions o * stride - pad + j for j in [0, kernel); positions outside [0, in) are padding.
// The output size is (in + 2 * pad - kernel) / stride + 1 (the CPU layers' formula).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PW_CNN_HD __host__ __device__
#else
#define PW_CNN_HD
#endif

namespace pw::exec::cuda {

PW_CNN_HD inline int64_t window_outputs(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

// The output positions [first, last] whose windows contain input position i (first > last
// when none does), for `out` outputs along the axis. A backward kernel that gathers over
// them, in increasing order, sums the contributions of each input element in a fixed order.
struct WindowRange {
  int64_t first, last;
};
PW_CNN_HD inline WindowRange covering_windows(int64_t i, int64_t kernel, int64_t stride, int64_t pad, int64_t out) {
  // o * stride - pad <= i  and  i <= o * stride - pad + kernel - 1
  const int64_t hi = i + pad;               // o * stride <= hi
  const int64_t lo = i + pad - kernel + 1;  // o * stride >= lo
  int64_t first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  int64_t last = hi / stride;  // hi >= 0 for i >= 0
  if (last > out - 1) last = out - 1;
  if (first < 0) first = 0;
  return {first, last};
}

// One 2-D window layer over NCHW maps: `channels` maps of in_h x in_w per sample, square
// windows of `kernel` at `stride` with `pad` zeros (or ignored positions) on every side.
struct Window2d {
  int64_t channels = 0, in_h = 0, in_w = 0, kernel = 1, stride = 1, pad = 0;
  PW_CNN_HD int64_t out_h() const { return window_outputs(in_h, kernel, stride, pad); }
  PW_CNN_HD int64_t out_w() const { return window_outputs(in_w, kernel, stride, pad); }
};

// Column matrix of a convolution over a chunk of `samples` samples: rows (c, kh, kw) for the
// input channels c in order (so a group's rows are contiguous), columns (sample, oh, ow).
// Row of (c, kh, kw) and the column of (sample, oh, ow):
PW_CNN_HD inline int64_t col_row(int64_t c, int64_t kh, int64_t kw, int64_t kernel) {
  return (c * kernel + kh) * kernel + kw;
}
PW_CNN_HD inline int64_t col_column(int64_t sample, int64_t oh, int64_t ow, int64_t out_h, int64_t out_w) {
  return (sample * out_h + oh) * out_w + ow;
}

// The channels-first index (o, s * pixels + p) of element i = (s, o, p) of an NCHW tensor of
// `samples` samples, `channels` channels and `pixels` positions per map.
PW_CNN_HD inline int64_t channels_first_index(int64_t i, int64_t channels, int64_t samples, int64_t pixels) {
  const int64_t p = i % pixels, o = (i / pixels) % channels, s = i / (pixels * channels);
  return (o * samples + s) * pixels + p;
}

// The per-element bodies of the kernels (one output element each; cnn_kernels.h has the
// contracts), shared by the kernels and the host tests that run them in a loop.

// Element i of the column matrix of `samples` samples of x (NCHW).
PW_CNN_HD inline float im2col_element(const float* x, const Window2d& w, int64_t samples, int64_t i) {
  const int64_t oh_n = w.out_h(), ow_n = w.out_w(), cols = samples * oh_n * ow_n;
  const int64_t row = i / cols, column = i % cols;
  const int64_t kw = row % w.kernel, kh = (row / w.kernel) % w.kernel, c = row / (w.kernel * w.kernel);
  const int64_t ow = column % ow_n, oh = (column / ow_n) % oh_n, s = column / (ow_n * oh_n);
  const int64_t h = oh * w.stride - w.pad + kh, x_w = ow * w.stride - w.pad + kw;
  if (h < 0 || h >= w.in_h || x_w < 0 || x_w >= w.in_w) return 0.0f;
  return x[((s * w.channels + c) * w.in_h + h) * w.in_w + x_w];
}

// Element i of dx (NCHW, `samples` samples): the sum of the column-matrix gradient entries that
// read it, kh then kw ascending.
PW_CNN_HD inline float col2im_element(const float* dcol, const Window2d& w, int64_t samples, int64_t i) {
  const int64_t oh_n = w.out_h(), ow_n = w.out_w(), cols = samples * oh_n * ow_n;
  const int64_t x_w = i % w.in_w, h = (i / w.in_w) % w.in_h, c = (i / (w.in_w * w.in_h)) % w.channels;
  const int64_t s = i / (w.in_w * w.in_h * w.channels);
  float sum = 0.0f;
  for (int64_t kh = 0; kh < w.kernel; ++kh) {
    const int64_t th = h + w.pad - kh;  // oh * stride
    if (th < 0 || th % w.stride != 0 || th / w.stride >= oh_n) continue;
    for (int64_t kw = 0; kw < w.kernel; ++kw) {
      const int64_t tw = x_w + w.pad - kw;
      if (tw < 0 || tw % w.stride != 0 || tw / w.stride >= ow_n) continue;
      sum += dcol[col_row(c, kh, kw, w.kernel) * cols + col_column(s, th / w.stride, tw / w.stride, oh_n, ow_n)];
    }
  }
  return sum;
}

// Output element i of pooling over planes of in_h x in_w (plane = sample * channels + c).
// Max: the first maximum in window order over the positions inside the map; *arg = its
// position h * in_w + w. Avg: the sum of those positions / kernel^2 (padding counts as 0).
PW_CNN_HD inline float max_pool_element(const float* x, const Window2d& w, int64_t i, int64_t* arg) {
  const int64_t oh_n = w.out_h(), ow_n = w.out_w();
  const int64_t ow = i % ow_n, oh = (i / ow_n) % oh_n, plane = i / (ow_n * oh_n);
  const float* xp = x + plane * w.in_h * w.in_w;
  float best = 0.0f;
  int64_t at = -1;
  for (int64_t kh = 0; kh < w.kernel; ++kh) {
    const int64_t h = oh * w.stride - w.pad + kh;
    if (h < 0 || h >= w.in_h) continue;
    for (int64_t kw = 0; kw < w.kernel; ++kw) {
      const int64_t c = ow * w.stride - w.pad + kw;
      if (c < 0 || c >= w.in_w) continue;
      const float v = xp[h * w.in_w + c];
      if (at < 0 || v > best) {
        best = v;
        at = h * w.in_w + c;
      }
    }
  }
  *arg = at;
  return best;
}

PW_CNN_HD inline float avg_pool_element(const float* x, const Window2d& w, int64_t i) {
  const int64_t oh_n = w.out_h(), ow_n = w.out_w();
  const int64_t ow = i % ow_n, oh = (i / ow_n) % oh_n, plane = i / (ow_n * oh_n);
  const float* xp = x + plane * w.in_h * w.in_w;
  float sum = 0.0f;
  for (int64_t kh = 0; kh < w.kernel; ++kh) {
    const int64_t h = oh * w.stride - w.pad + kh;
    if (h < 0 || h >= w.in_h) continue;
    for (int64_t kw = 0; kw < w.kernel; ++kw) {
      const int64_t c = ow * w.stride - w.pad + kw;
      if (c >= 0 && c < w.in_w) sum += xp[h * w.in_w + c];
    }
  }
  return sum / static_cast<float>(w.kernel * w.kernel);
}

// Input-gradient element i of pooling: the windows containing it, ascending (oh, then ow).
// Max: the sum of dy over those whose arg is this position. Avg: the sum of dy / kernel^2.
PW_CNN_HD inline float pool_grad_element(const float* dy, const float* arg, const Window2d& w, int64_t i) {
  const int64_t oh_n = w.out_h(), ow_n = w.out_w();
  const int64_t c = i % w.in_w, h = (i / w.in_w) % w.in_h, plane = i / (w.in_w * w.in_h);
  const WindowRange rh = covering_windows(h, w.kernel, w.stride, w.pad, oh_n);
  const WindowRange rw = covering_windows(c, w.kernel, w.stride, w.pad, ow_n);
  const float me = static_cast<float>(h * w.in_w + c);
  const int64_t base = plane * oh_n * ow_n;
  float sum = 0.0f;
  for (int64_t oh = rh.first; oh <= rh.last; ++oh)
    for (int64_t ow = rw.first; ow <= rw.last; ++ow)
      if (!arg || arg[base + oh * ow_n + ow] == me) sum += dy[base + oh * ow_n + ow];
  return arg ? sum : sum / static_cast<float>(w.kernel * w.kernel);
}

}  // namespace pw::exec::cuda
