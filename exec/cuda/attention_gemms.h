// The six matrix products of causal attention on the device (exec/cuda/layers/attention.cc) as
// GemmShapes over strided views, so that no head is copied out of qkv. Pure host arithmetic.
//
// Tensors (row-major, B samples, S = seq, D = d_model, H heads of dh = D / H columns):
//   qkv [B, S, 3D] (q | k | v, heads contiguous inside each), out / d_out [B, S, D],
//   probs / d_scores [B, H, S, S], d_qkv [B, S, 3D].
// Each product is batched over the samples (stride_*) and grouped over the heads
// (group_stride_*); the offsets say where the views start in the tensors named per field.
#pragma once

#include <cstdint>

#include "exec/cuda/gemm.h"

namespace pw::exec::cuda {

struct ViewProduct {
  GemmShape shape;
  int64_t a_offset = 0, b_offset = 0, c_offset = 0;  // elements into the A, B and C tensors
};

struct AttentionGemms {
  ViewProduct scores;   // probs = q · kᵀ (raw scores; the softmax kernel scales and masks)
  ViewProduct mix;      // out = probs · v
  ViewProduct d_v;      // d_qkv's v part = probsᵀ · d_out
  ViewProduct d_probs;  // d_scores = d_out · vᵀ
  ViewProduct d_q;      // d_qkv's q part = d_scores · k   (A: d_scores, B: qkv)
  ViewProduct d_k;      // d_qkv's k part = d_scoresᵀ · q  (A: d_scores, B: qkv)
};

// Throws InputError unless batch, seq, heads >= 1 and d_model is a positive multiple of heads.
AttentionGemms attention_gemms(int64_t batch, int64_t seq, int64_t d_model, int64_t heads);

}  // namespace pw::exec::cuda
