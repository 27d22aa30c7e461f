// Model zoo: builders for the layer DAGs Pipewright plans, simulates and runs.
//
// The layer names, kinds, shapes and attrs written here are a contract with exec/, which
// instantiates layers from them, and with models/cost, which prices them. Shapes are per
// sample; every model's batch() is ZooOptions::batch.
//
// gpt (GPT-2 style, pre-norm):
//   "input"      input              [seq]            {seq, vocab}          token ids
//   "embedding"  embedding          [seq, d_model]   {vocab, seq, d_model} token + learned position
//   "block0".."block{L-1}"
//                transformer_block  [seq, d_model]   {seq, d_model, heads, ffn}
//                  y = x + attn(ln1(x)); out = y + mlp(ln2(y)); causal attention with biased QKV
//                  and output projections; mlp = linear(d->ffn) + GELU + linear(ffn->d), biased.
//                  Parameters 4h^2 + 2hf + f + 9h.
//   "final_norm" layer_norm         [seq, d_model]   {dim}
//   "lm_head"    lm_head            [seq, vocab]     {seq, d_model, vocab, tied}  no bias;
//                  tied = 1 reuses the embedding's token table (0 parameters of its own).
//   "loss"       softmax_xent       [1]              {rows = seq, classes = vocab}
// mlp:
//   "input" [width] {dim} -> "fc0" linear {in, out, bias 1} -> "relu0" -> ... -> "fc{depth-1}"
//   (no relu after the last) -> "loss" mse_loss [1] {dim}.
// vgg16 (configuration D, no dropout):
//   "input" [3, image, image] {c, h, w}; blocks of conv2d {in_c, out_c, kernel 3, stride 1,
//   pad 1, in_h, in_w, bias 1} + relu ("conv{b}_{i}", "relu{b}_{i}"), each block ending in
//   "pool{b}" max_pool {c, kernel 2, stride 2, pad 0, in_h, in_w}; "flatten"; "fc6" "relu6" "fc7"
//   "relu7" "fc8" linear; "loss" softmax_xent {rows 1, classes}. Channels 64..512 and the fc
//   width 4096 are divided by width_divisor.
// resnet50 (torchvision v1.5 layout: stride on the 3x3 conv):
//   "input"; "conv1" 7x7/2 (bias 0), "bn1" batch_norm {c, h, w}, "relu1", "pool1" max_pool 3/2
//   pad 1; stages of 3, 4, 6, 3 bottlenecks "s{k}b{i}_{conv_a,bn_a,relu_a,conv_b,bn_b,relu_b,
//   conv_c,bn_c}" with a projection shortcut "s{k}b0_{proj,bn_proj}" in each stage's first block,
//   "s{k}b{i}_add" residual_add (inputs: main path, shortcut) and "s{k}b{i}_out" relu;
//   "avg_pool" avg_pool (global) [c, 1, 1], "flatten", "fc" linear, "loss" softmax_xent.
//   At width_divisor 1 and 1000 classes: 25,557,032 parameters (as torchvision).
// densenet121 (torchvision layout, growth 32, bottleneck 4 * growth, compression 0.5):
//   "input"; "conv0" 7x7/2 (bias 0), "bn0", "relu0", "pool0" max_pool 3/2 pad 1; dense blocks
//   of 6, 12, 24, 16 layers "d{k}l{i}_{bn_a,relu_a,conv_a (1x1 to 4*growth),bn_b,relu_b,conv_b
//   (3x3 to growth)}" and "d{k}l{i}_cat" concat (inputs: the block's running features, the new
//   growth channels); between blocks "t{k}_{bn,relu,conv (1x1, half the channels),pool}" with
//   pool an avg_pool 2/2; "bn5", "relu5", "avg_pool" (global), "flatten", "fc", "loss".
//   Channels (64 stem, growth 32) are divided by width_divisor. At width_divisor 1 and 1000
//   classes: 7,978,856 parameters (as torchvision).
// dropout_permille > 0 adds dropout layers (attrs permille) after vgg16's relu6 and relu7
// ("drop6", "drop7"), as the original VGG.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/layer_graph.h"

namespace pw::models {

struct ZooOptions {
  // gpt
  int64_t layers = 12;
  int64_t d_model = 768;
  int64_t heads = 12;
  int64_t ffn = 0;  // 0 => 4 * d_model
  int64_t seq = 1024;
  int64_t vocab = 50257;
  // all families
  int64_t batch = 8;
  // mlp
  int64_t depth = 4;
  int64_t width = 1024;
  // conv nets
  int64_t image = 224;
  int64_t width_divisor = 1;
  int64_t classes = 1000;
  int64_t dropout_permille = 0;  // vgg16: dropout after relu6 and relu7 when > 0
  // gpt
  bool tied_embeddings = false;
};

// The families build_zoo_model accepts, in a fixed order.
const std::vector<std::string_view>& zoo_families();

// Builds a zoo model. Throws InputError for an unknown family or impossible sizes (a zero or
// negative size, d_model not divisible by heads, an image too small for the net's pooling,
// a width_divisor that leaves a layer with no channels). Messages name the option
// ("--d-model") so the CLI can show them as is.
Model build_zoo_model(std::string_view family, const ZooOptions& options);

// The built-in default model of the main job: gpt, 4 layers, d_model 128, 4 heads, ffn 512,
// seq 64, vocab 256 (byte-level), batch 16.
ZooOptions default_model_options();
Model default_model();

}  // namespace pw::models
