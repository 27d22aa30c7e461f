#include "models/layer_graph.h"

#include <algorithm>
#include <queue>
#include <set>

#include "models/error.h"
#include "models/limits.h"

namespace pw::models {

namespace {
struct KindName {
  LayerKind kind;
  std::string_view name;
};
constexpr KindName kKindNames[] = {
    {LayerKind::input, "input"},
    {LayerKind::embedding, "embedding"},
    {LayerKind::linear, "linear"},
    {LayerKind::relu, "relu"},
    {LayerKind::gelu, "gelu"},
    {LayerKind::layer_norm, "layer_norm"},
    {LayerKind::attention, "attention"},
    {LayerKind::transformer_block, "transformer_block"},
    {LayerKind::residual_add, "residual_add"},
    {LayerKind::lm_head, "lm_head"},
    {LayerKind::softmax_xent, "softmax_xent"},
    {LayerKind::mse_loss, "mse_loss"},
    {LayerKind::conv2d, "conv2d"},
    {LayerKind::max_pool, "max_pool"},
    {LayerKind::avg_pool, "avg_pool"},
    {LayerKind::batch_norm, "batch_norm"},
    {LayerKind::flatten, "flatten"},
    {LayerKind::concat, "concat"},
    {LayerKind::dropout, "dropout"},
    {LayerKind::opaque, "opaque"},
};
}  // namespace

std::string_view to_string(LayerKind kind) {
  for (const auto& kn : kKindNames)
    if (kn.kind == kind) return kn.name;
  PW_CHECK(false, "LayerKind without a name");
}

LayerKind parse_layer_kind(std::string_view s, const std::string& path) {
  for (const auto& kn : kKindNames)
    if (kn.name == s) return kn.kind;
  std::string known;
  for (const auto& kn : kKindNames) known += (known.empty() ? "" : ", ") + std::string(kn.name);
  throw InputError(path + ": unknown layer kind \"" + std::string(s) + "\" (expected one of " + known + ")");
}

int64_t LayerSpec::attr(std::string_view key) const {
  auto it = attrs.find(std::string(key));
  if (it == attrs.end())
    throw InputError("layer \"" + name + "\" (" + std::string(to_string(kind)) + "): missing attribute \"" +
                     std::string(key) + "\"");
  return it->second;
}

int64_t LayerSpec::attr_or(std::string_view key, int64_t fallback) const {
  auto it = attrs.find(std::string(key));
  return it == attrs.end() ? fallback : it->second;
}

int64_t LayerSpec::output_elements() const {
  int64_t n = 1;
  for (int64_t d : output_shape)
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 56))
      throw InputError("layer \"" + name + "\": output_shape has more than 2^56 elements");
  return n;
}

std::vector<int> stable_topological_order(int n, const std::vector<Edge>& edges) {
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<int>> out(n);
  for (const Edge& e : edges) {
    out[e.from].push_back(e.to);
    ++indeg[e.to];
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int v = ready.top();
    ready.pop();
    order.push_back(v);
    for (int w : out[v])
      if (--indeg[w] == 0) ready.push(w);
  }
  return order;
}

std::vector<int> topological_order(int n, const std::vector<Edge>& edges, const std::vector<std::string>& names,
                                   const std::string& what) {
  std::vector<int> order = stable_topological_order(n, edges);
  if (static_cast<int>(order.size()) != n) {
    std::vector<bool> done(n, false);
    for (int v : order) done[v] = true;
    std::string stuck;
    int shown = 0;
    for (int i = 0; i < n && shown < 5; ++i)
      if (!done[i])
        stuck += (shown++ ? ", " : "") + (i < static_cast<int>(names.size()) ? names[i] : std::to_string(i));
    throw InputError(what + ": the graph has a cycle (through " + stuck + ")");
  }
  return order;
}

Model::Model(std::string name, std::vector<LayerSpec> layers, int64_t batch, const std::string& path_prefix)
    : name_(std::move(name)), batch_(batch) {
  if (layers.empty()) throw InputError(path_prefix + ": the model has no layers");
  if (batch < 1) throw InputError("model batch: expected >= 1, got " + std::to_string(batch));
  std::map<std::string, int, std::less<>> pos;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string at = join_path(path_prefix, i);
    if (layers[i].name.empty()) throw InputError(at + "/name: empty layer name");
    if (!pos.emplace(layers[i].name, static_cast<int>(i)).second)
      throw InputError(at + "/name: duplicate layer name \"" + layers[i].name + "\"");
    for (int64_t d : layers[i].output_shape)
      if (d < 1)
        throw InputError(at + "/output_shape: expected positive dimensions in layer \"" + layers[i].name + "\"");
  }
  std::vector<Edge> edges;
  std::vector<std::string> names;
  for (size_t i = 0; i < layers.size(); ++i) {
    names.push_back(layers[i].name);
    for (size_t k = 0; k < layers[i].inputs.size(); ++k) {
      auto it = pos.find(layers[i].inputs[k]);
      if (it == pos.end())
        throw InputError(join_path(join_path(path_prefix, i), "inputs") + "/" + std::to_string(k) + ": layer \"" +
                         layers[i].name + "\" reads unknown layer \"" + layers[i].inputs[k] + "\"");
      edges.push_back({it->second, static_cast<int>(i)});
    }
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    if (l.shares.empty()) continue;
    const std::string at = join_path(join_path(path_prefix, i), "shares");
    auto it = pos.find(l.shares);
    if (it == pos.end() || it->second == static_cast<int>(i))
      throw InputError(at + ": layer \"" + l.name + "\" shares the parameters of \"" + l.shares +
                       "\", which is not another layer of the model");
    const LayerSpec& owner = layers[it->second];
    if (owner.kind != l.kind || !owner.shares.empty())
      throw InputError(at + ": layer \"" + l.name + "\" shares the parameters of \"" + l.shares +
                       "\", which is not a layer of the same kind that owns its parameters");
  }
  std::vector<int> order = topological_order(static_cast<int>(layers.size()), edges, names, path_prefix);
  layers_.reserve(layers.size());
  for (int old : order) layers_.push_back(std::move(layers[old]));
  for (size_t i = 0; i < layers_.size(); ++i) index_.emplace(layers_[i].name, static_cast<int>(i));
  for (size_t i = 0; i < layers_.size(); ++i)
    for (const std::string& in : layers_[i].inputs) edges_.push_back({index_.at(in), static_cast<int>(i)});
}

int Model::index_of(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

void to_json(Json& j, const LayerSpec& l) {
  j = Json{{"name", l.name},
           {"kind", std::string(to_string(l.kind))},
           {"inputs", l.inputs},
           {"output_shape", l.output_shape},
           {"attrs", l.attrs}};
  if (!l.module.empty()) j["module"] = l.module;
  if (!l.shares.empty()) j["shares"] = l.shares;
}

void to_json(Json& j, const Model& m) {
  Json layers = Json::array();
  for (const LayerSpec& l : m.layers()) layers.push_back(l);
  j = Json{{"format", format_tag("model", 1)}, {"name", m.name()}, {"batch", m.batch()}, {"layers", layers}};
}

Model model_from_json(const Json& j) {
  require_object(j, "");
  check_format(j, "model", 1, "");
  std::string name = get_string(j, "name", "");
  int64_t batch = get_limited_or(j, "batch", "", 1, limits::kBatch);
  const Json& arr = require_array(j, "layers", "");
  if (static_cast<int64_t>(arr.size()) > limits::kLayers.max)
    throw InputError("/layers: more than " + std::to_string(limits::kLayers.max) + " layers");
  std::vector<LayerSpec> layers;
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string at = join_path("/layers", i);
    const Json& lj = require_object(arr[i], at);
    LayerSpec l;
    l.name = get_string(lj, "name", at);
    l.kind = parse_layer_kind(get_string(lj, "kind", at), join_path(at, "kind"));
    if (lj.contains("inputs")) {
      const Json& ins = require_array(lj, "inputs", at);
      for (size_t k = 0; k < ins.size(); ++k) {
        if (!ins[k].is_string())
          throw InputError(join_path(at, "inputs") + "/" + std::to_string(k) +
                           ": expected a layer name (string), got " + json_type_name(ins[k]));
        l.inputs.push_back(ins[k].get<std::string>());
      }
    }
    if (lj.contains("output_shape")) {
      const Json& shp = require_array(lj, "output_shape", at);
      for (size_t k = 0; k < shp.size(); ++k) {
        const std::string key = std::to_string(k);
        Json wrap = {{key, shp[k]}};
        l.output_shape.push_back(get_int(wrap, key, join_path(at, "output_shape"), 1));
      }
    }
    if (lj.contains("attrs")) {
      const Json& attrs = require_field(lj, "attrs", at);
      require_object(attrs, join_path(at, "attrs"));
      for (auto it = attrs.begin(); it != attrs.end(); ++it) {
        const Limit* limit = layer_attribute_limit(it.key());
        l.attrs[it.key()] = limit ? get_limited(attrs, it.key(), join_path(at, "attrs"), *limit)
                                  : get_int(attrs, it.key(), join_path(at, "attrs"), 0);
      }
    }
    if (lj.contains("module")) l.module = get_string(lj, "module", at);
    if (lj.contains("shares")) l.shares = get_string(lj, "shares", at);
    layers.push_back(std::move(l));
  }
  return Model(name, std::move(layers), batch, "/layers");
}

Model load_model_file(const std::string& file) { return parse_json_file<Model>(file, model_from_json); }

void save_model_file(const std::string& file, const Model& m) {
  Json j = m;
  save_json_file(file, j);
}

}  // namespace pw::models
