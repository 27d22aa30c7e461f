#include "exec/cuda/conv_plan.h"

#include <algorithm>

#include "exec/cuda/cnn_index.h"
#include "models/error.h"

namespace pw::exec::cuda {

int64_t ConvGeometry::out_h() const { return window_outputs(in_h, kernel, stride, pad); }
int64_t ConvGeometry::out_w() const { return window_outputs(in_w, kernel, stride, pad); }

int64_t conv_chunk_samples(const ConvGeometry& g, int64_t batch, int64_t budget_bytes) {
  PW_CHECK(batch >= 1, "conv_chunk_samples: empty batch");
  const int64_t per_sample = (g.col_rows() + g.out_c) * g.pixels() * static_cast<int64_t>(sizeof(float));
  return std::clamp<int64_t>(budget_bytes / std::max<int64_t>(per_sample, 1), 1, batch);
}

GemmShape conv_forward_gemm(const ConvGeometry& g, int64_t samples) {
  const int64_t cols = samples * g.pixels();
  GemmShape s;
  s.m = g.group_out();
  s.n = cols;
  s.k = g.group_rows();
  s.groups = g.groups;
  s.group_stride_a = g.group_out() * g.group_rows();
  s.group_stride_b = g.group_rows() * cols;
  s.group_stride_c = g.group_out() * cols;
  return s;
}

GemmShape conv_data_gemm(const ConvGeometry& g, int64_t samples) {
  const int64_t cols = samples * g.pixels();
  GemmShape s;
  s.m = g.group_rows();
  s.n = cols;
  s.k = g.group_out();
  s.trans_a = true;  // W_g stored [Og, Kg]
  s.groups = g.groups;
  s.group_stride_a = g.group_out() * g.group_rows();
  s.group_stride_b = g.group_out() * cols;
  s.group_stride_c = g.group_rows() * cols;
  return s;
}

GemmShape conv_weight_gemm(const ConvGeometry& g, int64_t samples) {
  const int64_t cols = samples * g.pixels();
  GemmShape s;
  s.m = g.group_out();
  s.n = g.group_rows();
  s.k = cols;
  s.trans_b = true;  // col_g stored [Kg, cols]
  s.groups = g.groups;
  s.group_stride_a = g.group_out() * cols;
  s.group_stride_b = g.group_rows() * cols;
  s.group_stride_c = g.group_out() * g.group_rows();
  return s;
}

StatGroups stat_groups(int64_t batch, int64_t group) {
  PW_CHECK(batch >= 1 && group >= 0, "stat_groups: empty batch or negative group");
  StatGroups r;
  r.size = group > 0 ? std::min(group, batch) : batch;
  r.count = (batch + r.size - 1) / r.size;
  return r;
}

}  // namespace pw::exec::cuda
