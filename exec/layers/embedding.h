// embedding: token + learned position embedding (attrs vocab, seq, d_model).
// Input: token ids [batch, seq] (floats holding integers in [0, vocab)); output
// [batch, seq, d_model] = token_table[id] + position_table[s]. No input gradient (ids).
// W scatters dy into the token table: parallel over d_model columns, so no two threads write
// the same element (deterministic, no atomics).
#pragma once

#include "exec/layer.h"

namespace pw::exec {

class Embedding : public Layer {
 public:
  Embedding(models::LayerSpec spec, int64_t vocab, int64_t seq, int64_t d_model);
  std::vector<std::vector<int64_t>> input_shapes() const override { return {{seq_}}; }
  Tensor forward(Inputs in, Context& ctx) override;
  std::vector<Tensor> backward_input(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void backward_weight(Inputs in, Context& ctx, const Tensor& grad_out) override;
  void init_parameters(uint64_t seed) override;

  // The [vocab, d_model] token table and its gradient (for a tied lm_head).
  Tensor* token_table() override { return &tokens_; }
  Tensor* token_table_grad() override { return &grad_tokens_; }

 private:
  int64_t vocab_, seq_, d_;
  Tensor tokens_, positions_, grad_tokens_, grad_positions_;
};

}  // namespace pw::exec
