#include "exec/cuda/attention_gemms.h"

#include <string>

#include "models/error.h"

namespace pw::exec::cuda {

namespace {

// A product of S-row views: C[S, n] = op(A)[S, k] · op(B)[k, n], per sample and head.
struct Operand {
  int64_t ld, sample_stride, head_stride, offset;
};

ViewProduct view_product(int64_t batch, int64_t heads, int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b,
                         const Operand& a, const Operand& b, const Operand& c) {
  ViewProduct p;
  GemmShape& s = p.shape;
  s.m = m;
  s.n = n;
  s.k = k;
  s.trans_a = trans_a;
  s.trans_b = trans_b;
  s.lda = a.ld;
  s.ldb = b.ld;
  s.ldc = c.ld;
  s.batch = batch;
  s.stride_a = a.sample_stride;
  s.stride_b = b.sample_stride;
  s.stride_c = c.sample_stride;
  s.groups = heads;
  s.group_stride_a = a.head_stride;
  s.group_stride_b = b.head_stride;
  s.group_stride_c = c.head_stride;
  p.a_offset = a.offset;
  p.b_offset = b.offset;
  p.c_offset = c.offset;
  return p;
}

}  // namespace

AttentionGemms attention_gemms(int64_t batch, int64_t seq, int64_t d_model, int64_t heads) {
  if (batch < 1 || seq < 1 || heads < 1 || d_model < 1 || d_model % heads != 0)
    throw InputError("attention on the device: batch " + std::to_string(batch) + ", seq " + std::to_string(seq) +
                     ", d_model " + std::to_string(d_model) + ", heads " + std::to_string(heads) +
                     ": expected positive sizes with d_model a multiple of heads");
  const int64_t s = seq, d = d_model, h = heads, dh = d_model / heads, l = 3 * d_model;
  // Views: a head of q, k or v in qkv (or d_qkv); a head of out; a head's [S, S] square.
  const Operand q{l, s * l, dh, 0}, k{l, s * l, dh, d}, v{l, s * l, dh, 2 * d};
  const Operand o{d, s * d, dh, 0};
  const Operand sq{s, h * s * s, s * s, 0};
  AttentionGemms g;
  g.scores = view_product(batch, h, s, s, dh, false, true, q, k, sq);
  g.mix = view_product(batch, h, s, dh, s, false, false, sq, v, o);
  g.d_v = view_product(batch, h, s, dh, s, true, false, sq, o, v);
  g.d_probs = view_product(batch, h, s, s, dh, false, true, o, v, sq);
  g.d_q = view_product(batch, h, s, dh, s, false, false, sq, k, q);
  g.d_k = view_product(batch, h, s, dh, s, true, false, sq, q, k);
  return g;
}

}  // namespace pw::exec::cuda
