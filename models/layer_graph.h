// The model: a DAG of layers (LayerSpec), validated and kept in a topological order.
//
// A pipeline stage is a contiguous range of Model::layers() (which is a topological order);
// every tensor that crosses a cut is sent, skip connections included. Shapes are per sample
// (the batch dimension is not stored); bytes assume fp32 unless a layer says otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/json_util.h"

namespace pw::models {

// Operator kinds known to the cost model and the executor. "opaque" is an imported layer
// whose work is known only through its profile (e.g. a PipeDream graph node).
enum class LayerKind {
  input,      // data source (no compute); output_shape = one sample; attrs {seq, vocab}
              // for token ids (int32), else descriptive ({dim} or {c, h, w})
  embedding,  // token + position embedding: attrs vocab, seq, d_model
  linear,     // attrs in, out, bias (0/1, default 1); applied to the last dim, other dims are rows
  relu,
  gelu,
  layer_norm,         // attrs dim
  attention,          // multi-head self-attention: attrs seq, d_model, heads, causal (0/1, default 1;
                      // the executor runs causal attention only)
  transformer_block,  // pre-norm GPT block: attrs seq, d_model, heads, ffn
  residual_add,       // sum of its two inputs
  lm_head,            // attrs seq, d_model, vocab, tied (0/1: reuses the embedding's token table); logits
  softmax_xent,       // softmax cross-entropy loss over attrs classes (per row: attrs rows)
  mse_loss,           // attrs dim; the target has the prediction's shape
  conv2d,             // attrs in_c, out_c, kernel, stride, pad, in_h, in_w, bias (0/1, default 1),
                      // groups (default 1; divides in_c and out_c)
  max_pool,           // attrs c, kernel, stride, pad (default 0), in_h, in_w
  avg_pool,           // attrs c, kernel, stride, pad (default 0), in_h, in_w (kernel = in_h: global)
  batch_norm,         // attrs c (the zoo also records h, w); training mode, batch statistics
  flatten,
  concat,   // concatenation of its inputs along the first per-sample dim (channels)
  dropout,  // attrs permille (drop probability in 1/1000, 0..999); inverted scaling
  opaque,
};

std::string_view to_string(LayerKind kind);
// Throws InputError("<path>: unknown layer kind \"x\" (expected one of ...)").
LayerKind parse_layer_kind(std::string_view s, const std::string& path);

struct LayerSpec {
  std::string name;
  LayerKind kind = LayerKind::opaque;
  std::vector<std::string> inputs;       // producer layer names; empty for a source
  std::vector<int64_t> output_shape;     // per sample, batch dimension excluded
  std::map<std::string, int64_t> attrs;  // kind-specific integers (see LayerKind)
  // A framework's name for where a pipeline split just before this layer goes (the PyTorch
  // bridge: the submodule path whose call begins with this layer); empty when there is none.
  std::string module;
  // Another layer of the same kind whose parameters this one reuses: a module called twice (on
  // inputs of other sizes, its shape attrs may differ). Its parameters are counted once, at that layer; empty when the
  // layer owns its own.
  std::string shares;

  // Throws InputError naming the layer and the missing attribute.
  int64_t attr(std::string_view key) const;
  int64_t attr_or(std::string_view key, int64_t fallback) const;
  // Elements of one sample's output.
  int64_t output_elements() const;
};

struct Edge {
  int from = 0;  // index into Model::layers()
  int to = 0;
  bool operator==(const Edge&) const = default;
};

class Model {
 public:
  Model() = default;
  // Validates and orders: non-empty, unique names, every input names a layer, no cycle,
  // positive shapes, `shares` names another layer of the same kind that owns its own. Keeps the given order when it is
  // already topological, otherwise a stable topological order (Kahn's algorithm, ties by original position). Throws
  // InputError naming the offending layer (by `path_prefix`/index and name).
  Model(std::string name, std::vector<LayerSpec> layers, int64_t batch = 1, const std::string& path_prefix = "/layers");

  const std::string& name() const { return name_; }
  int64_t batch() const { return batch_; }
  const std::vector<LayerSpec>& layers() const { return layers_; }
  const std::vector<Edge>& edges() const { return edges_; }
  size_t size() const { return layers_.size(); }
  // Index of a layer by name, or -1.
  int index_of(std::string_view name) const;

 private:
  std::string name_;
  int64_t batch_ = 1;
  std::vector<LayerSpec> layers_;
  std::vector<Edge> edges_;  // sorted by (to, input position)
  std::map<std::string, int, std::less<>> index_;
};

// Kahn's algorithm, stable (among ready nodes the smallest index first). When the edges have a
// cycle the result is partial (size < n): the missing nodes are on a cycle or behind one.
std::vector<int> stable_topological_order(int n, const std::vector<Edge>& edges);

// Topological order of n nodes under `edges` (stable: ties by index). Throws InputError
// "<what>: cycle through <names...>" when there is none; `names` labels nodes in messages.
std::vector<int> topological_order(int n, const std::vector<Edge>& edges, const std::vector<std::string>& names,
                                   const std::string& what);

// JSON: {"format": "pipewright.model/1", "name", "batch", "layers": [{name, kind, inputs,
// output_shape, attrs, module (optional), shares (optional)}]}.
void to_json(Json& j, const LayerSpec& l);
void to_json(Json& j, const Model& m);
Model model_from_json(const Json& j);
Model load_model_file(const std::string& file);
void save_model_file(const std::string& file, const Model& m);

}  // namespace pw::models
