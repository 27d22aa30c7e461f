// Host-side plan of the CUDA conv2d (exec/cuda/layers/conv.cc): the layer's geometry, how a
// micro-batch is cut into chunks of samples, and the three matrix products of a chunk
// (gemm.h), so the shapes can be checked on the host without a GPU.
//
// The convolution is an explicit GEMM over a column matrix (cnn_index.h: col_row, col_column)
// of a chunk of s samples, P = out_h * out_w pixels per sample, G groups, and per group
// Kg = in_c / G * kernel^2 rows and Og = out_c / G output channels:
//   forward   Y[out_c, s * P]  = W[out_c, Kg] · col[in_c * kernel^2, s * P]  (per group)
//   data      dcol[Kg, s * P]  = W_gᵀ · dY_g                                  (per group)
//   weight    gW[Og, Kg]      += dY_g · col_gᵀ                                (per group, beta 1)
// Y and dY are the chunk's output (gradient) with channels first ([out_c, s, P]); kernels
// permute them from and to the NCHW tensors. Chunks run in sample order, so the weight
// gradient's sum over chunks has a fixed order.
#pragma once

#include <cstdint>

#include "exec/cuda/gemm.h"

namespace pw::exec::cuda {

struct ConvGeometry {
  int64_t in_c = 0, out_c = 0, kernel = 1, stride = 1, pad = 0, in_h = 0, in_w = 0, groups = 1;

  int64_t out_h() const;
  int64_t out_w() const;
  int64_t pixels() const { return out_h() * out_w(); }         // P
  int64_t col_rows() const { return in_c * kernel * kernel; }  // rows of the column matrix
  int64_t group_rows() const { return col_rows() / groups; }   // Kg
  int64_t group_out() const { return out_c / groups; }         // Og
  int64_t weight_numel() const { return out_c * group_rows(); }
};

// Default bytes of a chunk's scratch (its column matrix and channels-first output).
inline constexpr int64_t kConvScratchBytes = int64_t(256) << 20;

// Samples per chunk: the most (at most `batch`, at least 1) whose column matrix plus the
// channels-first output [out_c, s * P] take at most `budget_bytes` of fp32.
int64_t conv_chunk_samples(const ConvGeometry& g, int64_t batch, int64_t budget_bytes = kConvScratchBytes);

// The products of one chunk of `samples` samples (see above), for pointers at the chunk's
// col / Y / dY and the weight tensor [out_c, in_c / G, k, k].
GemmShape conv_forward_gemm(const ConvGeometry& g, int64_t samples);
GemmShape conv_data_gemm(const ConvGeometry& g, int64_t samples);
GemmShape conv_weight_gemm(const ConvGeometry& g, int64_t samples);

// Statistics groups of batch_norm (exec/layers/batch_norm.h): `group` samples each (0: the
// whole batch), the last one smaller when it does not divide the batch.
struct StatGroups {
  int64_t size = 0;   // samples per group (the last may have fewer)
  int64_t count = 0;  // groups
};
StatGroups stat_groups(int64_t batch, int64_t group);

}  // namespace pw::exec::cuda
