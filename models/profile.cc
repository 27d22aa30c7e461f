#include "models/profile.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_set>

#include "models/error.h"
#include "models/limits.h"
#include "models/profile_points.h"

namespace pw::models {

int64_t Profile::total_forward_ns() const {
  int64_t t = 0;
  for (const auto& l : layers)
    if (!l.is_data_loading) t += l.forward_ns;
  return t;
}

int64_t Profile::total_backward_ns() const {
  int64_t t = 0;
  for (const auto& l : layers)
    if (!l.is_data_loading) t += l.backward_ns();
  return t;
}

int64_t Profile::total_parameter_bytes() const {
  int64_t t = 0;
  for (const auto& l : layers) t += l.parameter_bytes;
  return t;
}

std::vector<bool> stage_starts_allowed(const Profile& p) {
  std::vector<bool> ok(p.layers.size(), true);
  const bool paths =
      std::any_of(p.layers.begin(), p.layers.end(), [](const LayerProfile& l) { return !l.module.empty(); });
  if (!paths) return ok;
  for (size_t i = 1; i < p.layers.size(); ++i) ok[i] = !p.layers[i].module.empty();
  return ok;
}

int Profile::index_of(const std::string& name) const {
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i].name == name) return static_cast<int>(i);
  return -1;
}

namespace {

// Each time and size of a layer, with the limit it and its sum over the layers must keep.
struct Quantity {
  const char* name;
  int64_t LayerProfile::*field;
  const Limit* limit;
};
constexpr Quantity kQuantities[] = {
    {"forward_ns", &LayerProfile::forward_ns, &limits::kDurationNs},
    {"backward_input_ns", &LayerProfile::backward_input_ns, &limits::kDurationNs},
    {"backward_weight_ns", &LayerProfile::backward_weight_ns, &limits::kDurationNs},
    {"step_ns", &LayerProfile::step_ns, &limits::kDurationNs},
    {"output_bytes", &LayerProfile::output_bytes, &limits::kBytes},
    {"stash_bytes", &LayerProfile::stash_bytes, &limits::kBytes},
    {"parameter_bytes", &LayerProfile::parameter_bytes, &limits::kBytes},
    {"optimizer_bytes", &LayerProfile::optimizer_bytes, &limits::kBytes},
    {"workspace_bytes", &LayerProfile::workspace_bytes, &limits::kBytes},
    {"weight_pending_bytes", &LayerProfile::weight_pending_bytes, &limits::kBytes},
};

}  // namespace

void validate_profile(const Profile& p, const std::string& what) {
  if (p.layers.empty()) throw InputError(what + ": the profile has no layers");
  if (p.micro_batch < 1) throw InputError(what + ": micro_batch must be >= 1");
  if (p.micro_batch > limits::kMicroBatchSize.max)
    throw InputError(what + ": micro_batch " + std::to_string(p.micro_batch) + " is more than " +
                     std::to_string(limits::kMicroBatchSize.max));
  if (static_cast<int64_t>(p.layers.size()) > limits::kLayers.max)
    throw InputError(what + ": more than " + std::to_string(limits::kLayers.max) + " layers");
  std::unordered_set<std::string_view> names;  // views of p's layer names
  names.reserve(p.layers.size());
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const auto& l = p.layers[i];
    auto at = [&] { return what + ": layer " + std::to_string(i) + " (\"" + l.name + "\")"; };
    if (!names.insert(l.name).second) throw InputError(at() + ": duplicate layer name");
    if (l.forward_ns < 0 || l.backward_input_ns < 0 || l.backward_weight_ns < 0 || l.output_bytes < 0 ||
        l.stash_bytes < 0 || l.parameter_bytes < 0 || l.optimizer_bytes < 0 || l.workspace_bytes < 0 ||
        l.weight_pending_bytes < 0 || l.step_ns < 0)
      throw InputError(at() + ": negative time or size");
  }
  // Each value is within its limit before it is added, so a sum (at most twice a limit) cannot
  // leave int64 before it is checked.
  for (const Quantity& q : kQuantities) {
    int64_t sum = 0;
    for (size_t i = 0; i < p.layers.size(); ++i) {
      const int64_t v = p.layers[i].*q.field;
      auto at = [&] { return what + ": layer " + std::to_string(i) + " (\"" + p.layers[i].name + "\")"; };
      if (v > q.limit->max)
        throw InputError(at() + ": " + q.name + " " + std::to_string(v) + " is more than " +
                         std::to_string(q.limit->max));
      sum += v;
      if (sum > q.limit->max)
        throw InputError(at() + ": the layers' " + q.name + " up to this one sum to " + std::to_string(sum) +
                         ", more than " + std::to_string(q.limit->max));
    }
  }
  const int n = static_cast<int>(p.layers.size());
  for (size_t k = 0; k < p.edges.size(); ++k) {
    const Edge& e = p.edges[k];
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n)
      throw InputError(what + ": edge " + std::to_string(k) + " refers to a layer index out of range");
    if (e.from >= e.to)
      throw InputError(what + ": edge " + std::to_string(k) + " (" + p.layers[e.from].name + " -> " +
                       p.layers[e.to].name + ") does not follow the layer order (cycle or unsorted)");
  }
}

void to_json(Json& j, const LayerProfile& l) {
  j = Json{{"name", l.name},
           {"kind", l.kind},
           {"forward_ns", l.forward_ns},
           {"backward_input_ns", l.backward_input_ns},
           {"backward_weight_ns", l.backward_weight_ns},
           {"output_bytes", l.output_bytes},
           {"stash_bytes", l.stash_bytes},
           {"parameter_bytes", l.parameter_bytes},
           {"optimizer_bytes", l.optimizer_bytes},
           {"workspace_bytes", l.workspace_bytes}};
  if (l.weight_pending_bytes > 0) j["weight_pending_bytes"] = l.weight_pending_bytes;
  if (l.is_data_loading) j["is_data_loading"] = true;
  if (l.step_ns > 0) j["step_ns"] = l.step_ns;
  if (!l.module.empty()) j["module"] = l.module;
}

void to_json(Json& j, const Profile& p) {
  Json layers = Json::array();
  for (const auto& l : p.layers) layers.push_back(l);
  Json edges = Json::array();
  for (const Edge& e : p.edges) edges.push_back({p.layers[e.from].name, p.layers[e.to].name});
  j = Json{{"format", format_tag("profile", 1)},
           {"model", p.model},
           {"source", p.source},
           {"device", {{"name", p.device.name}, {"cores", p.device.cores}, {"threads", p.device.threads}}},
           {"micro_batch", p.micro_batch},
           {"layers", layers},
           {"edges", edges}};
  measurement_to_json(j, p);
}

Profile profile_from_json(const Json& j) {
  require_object(j, "");
  check_format(j, "profile", 1, "");
  Profile p;
  p.model = get_string(j, "model", "");
  p.source = get_string(j, "source", "");
  if (p.source != "analytic" && p.source != "measured" && p.source != "pipedream")
    throw InputError("/source: expected \"analytic\", \"measured\" or \"pipedream\", got \"" + p.source + "\"");
  const Json& dev = require_field(j, "device", "");
  require_object(dev, "/device");
  p.device.name = get_string(dev, "name", "/device");
  p.device.cores = get_limited_int_or(dev, "cores", "/device", 0, limits::kThreads);
  p.device.threads = get_limited_int_or(dev, "threads", "/device", 0, limits::kThreads);
  p.micro_batch = get_limited(j, "micro_batch", "", limits::kMicroBatchSize);
  const Json& arr = require_array(j, "layers", "");
  if (arr.empty()) throw InputError("/layers: the profile has no layers");
  if (static_cast<int64_t>(arr.size()) > limits::kLayers.max)
    throw InputError("/layers: more than " + std::to_string(limits::kLayers.max) + " layers");
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string at = join_path("/layers", i);
    require_object(arr[i], at);
    LayerProfile l;
    l.name = get_string(arr[i], "name", at);
    l.kind = get_string(arr[i], "kind", at);
    l.forward_ns = get_limited(arr[i], "forward_ns", at, limits::kDurationNs);
    l.backward_input_ns = get_limited(arr[i], "backward_input_ns", at, limits::kDurationNs);
    l.backward_weight_ns = get_limited(arr[i], "backward_weight_ns", at, limits::kDurationNs);
    l.output_bytes = get_limited(arr[i], "output_bytes", at, limits::kBytes);
    l.stash_bytes = get_limited(arr[i], "stash_bytes", at, limits::kBytes);
    l.parameter_bytes = get_limited(arr[i], "parameter_bytes", at, limits::kBytes);
    l.optimizer_bytes = get_limited_or(arr[i], "optimizer_bytes", at, 0, limits::kBytes);
    l.workspace_bytes = get_limited_or(arr[i], "workspace_bytes", at, 0, limits::kBytes);
    l.weight_pending_bytes = get_limited_or(arr[i], "weight_pending_bytes", at, 0, limits::kBytes);
    l.is_data_loading = get_bool_or(arr[i], "is_data_loading", at, false);
    l.step_ns = get_limited_or(arr[i], "step_ns", at, 0, limits::kDurationNs);
    if (arr[i].contains("module")) l.module = get_string(arr[i], "module", at);
    p.layers.push_back(std::move(l));
  }
  std::map<std::string, int> index;
  for (size_t i = 0; i < p.layers.size(); ++i)
    if (!index.emplace(p.layers[i].name, static_cast<int>(i)).second)
      throw InputError(join_path("/layers", i) + "/name: duplicate layer name \"" + p.layers[i].name + "\"");
  if (j.contains("edges")) {
    const Json& edges = require_array(j, "edges", "");
    for (size_t k = 0; k < edges.size(); ++k) {
      const std::string at = join_path("/edges", k);
      const Json& e = edges[k];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_string())
        throw InputError(at + ": expected [\"from layer\", \"to layer\"]");
      for (int side = 0; side < 2; ++side)
        if (!index.count(e[side].get<std::string>()))
          throw InputError(at + ": edge to unknown layer \"" + e[side].get<std::string>() + "\"");
      p.edges.push_back({index.at(e[0].get<std::string>()), index.at(e[1].get<std::string>())});
    }
  }
  measurement_from_json(j, p);
  validate_profile(p, "profile");
  return p;
}

Profile load_profile_file(const std::string& file) { return parse_json_file<Profile>(file, profile_from_json); }

void save_profile_file(const std::string& file, const Profile& p) {
  Json j = p;
  save_json_file(file, j);
}

}  // namespace pw::models
