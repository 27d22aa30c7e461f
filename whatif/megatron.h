// Megatron-LM's 3D parallelism of a GPT: tensor (t) x pipeline (p) x data (d) parallel, as in
// Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM" (SC'21), with the activation sizes of Korthikanti et al. 2022 (sequence
// parallelism). Every candidate's iteration time and peak memory come from the simulator
// (sim/engine.h) running the pipeline schedule over stage costs built here.
//
// Model (l layers, hidden h, a heads, sequence s, vocabulary V, tied embeddings):
//   parameters P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))        (SC'21 eq. 2, exact)
//   FLOPs per iteration of batch B with full recomputation
//     F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)),                   (SC'21 eq. 3, exact)
//   and without recomputation 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (one forward less).
//
// Per device, per micro-batch of b samples. Times with a constant efficiency (Machine::efficiency
// in (0, 1]): FLOPs / (peak x efficiency), bf16 or fp32 peak of the device; with efficiency 0
// and a device whose catalog entry has a GEMM ceiling (bf16 only), the layer is priced as
// `plan` prices a transformer block (models/transformer_cost.h): each product by its own shape
// (models/gemm_efficiency.h) plus the memory-bound kernels Machine::kernels names (layer norms,
// residual adds, GeLU, softmax; with Megatron-LM's kernels also hidden and attention dropout
// and fp32 gradient accumulation) at the achieved memory bandwidth; without a ceiling, 0 means
// the constant 0.5 (models::kConstantEfficiency). Constant-efficiency FLOPs:
//   a transformer layer: forward 24 b s h^2 (1 + s/(6h)) / t FLOPs, input gradient and weight
//   gradient as much again each; with recompute the engine adds one more forward. Tensor
//   parallelism adds two all-reduces of b s h x 2 bytes to the forward (and to the re-forward)
//   and two to the backward, ring all-reduce over t devices of one node on the intra-node
//   link: 2 (t-1)/t x bytes / bandwidth + 2 (t-1) x latency each (sequence parallelism turns
//   each into a reduce-scatter plus an all-gather, the same volume and time).
//   The layers around the blocks -- the token and position embedding, the final layer norm,
//   the LM head (the logits) and the softmax cross-entropy loss -- are priced by the planner's
//   cost model (models/cost.h) exactly as `plan --model gpt` prices the zoo's GPT
//   (models::default_analytic_profile: micro-batch 1 scaled linearly to b), with the vocabulary
//   split over t (Megatron-LM's vocabulary-parallel embedding, output layer and loss): the LM
//   head 2 b s h V / t forward and twice that backward at a constant efficiency, the others
//   memory bound. The embedding is on the first stage, the rest on the last (Layout can place
//   them as a plan does); with recompute the engine re-forwards them with their stage.
//   Pipeline transfers: b s h x 2 / t bytes per micro-batch per direction (Megatron's
//   scatter/gather over the t links), on the level joining consecutive stages; the logits,
//   b s V / t x 2 bytes, where the LM head and the loss are on different stages.
//   Data parallelism: one ring all-reduce over d of the stage's gradients (2 bytes per
//   parameter of the device) on the level the data-parallel group crosses, before the step.
// Memory per device (bytes): parameters of its layers / t (plus V h / t embedding on the
// embedding's stage and on the LM head's, s h position embedding on the embedding's) x 16 for
// mixed-precision Adam (2 weights + 2 gradients + 12 optimizer state: fp32 master, m, v);
// ZeRO-1 divides the 12 by d. The fp32 logits (4 b s V / t) are kept on the loss's stage.
// Activations per layer and micro-batch: s b h (10 + 24/t + 5 a s/(h t)), with sequence
// parallelism s b h (34/t + 5 a s/(h t)); with full recomputation only the layer input,
// 2 s b h (/ t with sequence parallelism), plus the working set of one layer while it
// recomputes. The simulator tracks how many micro-batches are in flight per stage.
//
// Device numbering: t innermost (one node must hold a tensor-parallel group), then d, then p.
// All functions are pure and safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/device.h"
#include "models/transformer_cost.h"
#include "whatif/runner.h"

namespace pw::whatif {

struct GptShape {
  int64_t layers = 96, hidden = 12288, heads = 96, seq = 2048, vocab = 51200;
};

// Exactly 12 l h^2 + 13 l h + (V + s) h (SC'21 eq. 2 multiplied out).
int64_t megatron_parameters(const GptShape& g);
// SC'21 eq. 3 (recompute) or its 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) counterpart.
double megatron_flops(const GptShape& g, int64_t batch, bool recompute);

struct Machine {
  models::DeviceSpec device;
  models::LinkSpec intra;  // joins the devices of a node
  models::LinkSpec inter;  // joins nodes (per device: each device has its own port)
  int devices_per_node = 8;
  int devices = 8;
  double efficiency = 0;  // (0, 1]: a constant fraction of peak for every product;
                          // 0: the device's GEMM curve (see above)
  bool bf16 = true;
  // The memory-bound kernels of a block under the GEMM curve: Pipewright's GPT (the zoo's,
  // what `plan` prices) or models::kMegatronKernels (SC'21's GPT, for its published runs).
  models::BlockKernels kernels;
};

struct Layout {
  int tp = 1, pp = 1, dp = 1;  // tp * pp * dp == devices
  int micro_batch = 1;         // samples per micro-batch (b)
  int chunks = 1;              // v > 1: interleaved 1F1B with v model chunks per device
  bool recompute = true;
  bool sequence_parallel = false;
  bool zero1 = false;
  // Transformer blocks of each of the p x v virtual stages, in order (they add up to the
  // layers); empty: Megatron-LM's equal cut (p x v divides the layers). A given cut puts a
  // question to this model in the planner's terms: tests/whatif/one_answer_test.cc gives it the
  // planner's cut, which balances the logits' stage against the others.
  std::vector<int> stage_layers;
  // The virtual stages of the layers around the blocks; -1: Megatron-LM's layout, the embedding
  // on the first stage and the final layer norm, LM head and loss on the last. A cut taken from
  // a plan places them where the plan does (the planner may give the LM head or the loss a
  // stage of its own). The embedding must precede the blocks' stages, the final norm follow
  // them, and final norm <= LM head <= loss.
  int embedding_stage = -1, final_norm_stage = -1, lm_head_stage = -1, loss_stage = -1;
  std::string schedule() const { return chunks > 1 ? "interleaved-1f1b" : "1f1b"; }
};

// Seconds per iteration on the pipeline's first device: compute + bubble + tp + dp is the
// iteration; pp (pipeline transfers, overlapped with compute) is shown for scale.
struct TimeSplit {
  double compute = 0, bubble = 0, tp = 0, pp = 0, dp = 0;
};

struct Evaluation {
  bool feasible = false;
  std::string reason;  // why not (shape or memory)
  double iteration_s = 0;
  double samples_per_s = 0;
  double tflops_per_device = 0;         // the paper's F (with or without recompute as laid out) / time / N
  double mfu = 0;                       // model FLOPs (no recompute) / time / N / peak
  int64_t peak_memory_bytes = 0;        // largest over devices, from the simulator
  int64_t weights_optimizer_bytes = 0;  // of the fullest device
  TimeSplit split;
};

// Checks shape rules (divisibility, t within a node, heads % t, layers % (p v) or a stage_layers
// cut of p v stages adding up to the layers, batch % (d b),
// interleaving needs m % p == 0) and returns them as `reason` when broken.
Evaluation evaluate_layout(const GptShape& g, int64_t batch, const Machine& m, const Layout& lay);

// The layouts `best_layout` searches: t | devices_per_node, t | heads, p | layers (or the given cut), d = N/(t p),
// b in {1, 2, 4, 8} dividing B/d, v in {1, 2, 4} (v > 1 needs m % p == 0 and p > 1), recompute
// on/off, sequence parallelism on/off (t > 1), ZeRO-1 on/off (d > 1). `tp`/`pp`/`dp` lists
// restrict the axes when non-empty.
struct SearchAxes {
  std::vector<int> tp, pp, dp, micro_batch, chunks;
  std::vector<bool> recompute{true, false}, sequence_parallel{false, true}, zero1{false, true};
  // Non-empty: every layout cuts its p x v virtual stages so (Layout::stage_layers); only
  // layouts with p x v == its size are searched.
  std::vector<int> stage_layers;
};
std::vector<Layout> candidate_layouts(const GptShape& g, int64_t batch, const Machine& m, const SearchAxes& axes);

struct SearchResult {
  std::vector<Layout> layouts;
  std::vector<Evaluation> evaluations;  // same order
  int best = -1;                        // fastest feasible (ties: first), -1 when none
  std::vector<int> frontier;            // feasible, Pareto in (iteration time, peak memory), by time
};
// Progress (one item per layout) on stderr as `progress` says (whatif/runner.h).
SearchResult search_layouts(const GptShape& g, int64_t batch, const Machine& m, const SearchAxes& axes, int threads,
                            ProgressMode progress = ProgressMode::off);

}  // namespace pw::whatif
