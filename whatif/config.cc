#include "whatif/config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/device.h"
#include "models/error.h"
#include "models/error_text.h"
#include "models/limits.h"
#include "models/optimizer_memory.h"
#include "models/zoo.h"
#include "planner/schedule.h"

namespace pw::whatif {
namespace {

std::string known_list() {
  std::string s;
  for (std::string_view n : whatif_setting_names()) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

[[noreturn]] void bad(const std::string& path, const std::string& expected, const Json& got) {
  throw InputError(path + ": expected " + expected + ", got " + describe_json_value(got));
}

int64_t as_int(const Json& v, const std::string& path, int64_t min_value,
               int64_t max_value = std::numeric_limits<int64_t>::max()) {
  std::string what =
      "an integer in [" + std::to_string(min_value) + ", " +
      (max_value == std::numeric_limits<int64_t>::max() ? std::string("inf") : std::to_string(max_value)) + "]";
  if (v.is_number_integer()) {
    int64_t x = v.get<int64_t>();
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max_value)) bad(path, what, v);
    if (x < min_value || x > max_value) bad(path, what, v);
    return x;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(min_value) &&
        d <= static_cast<double>(max_value))
      return static_cast<int64_t>(d);
  }
  bad(path, what, v);
}

std::string as_string(const Json& v, const std::string& path) {
  if (!v.is_string() || v.get<std::string>().empty()) bad(path, "a non-empty string", v);
  return v.get<std::string>();
}

bool as_bool(const Json& v, const std::string& path) {
  if (!v.is_boolean()) bad(path, "true or false", v);
  return v.get<bool>();
}

std::string one_of(const Json& v, const std::string& path, std::initializer_list<const char*> options) {
  std::string list;
  for (const char* o : options) list += (list.empty() ? "" : " | ") + std::string("\"") + o + "\"";
  if (v.is_string())
    for (const char* o : options)
      if (v.get<std::string>() == o) return o;
  bad(path, list, v);
}

}  // namespace

const std::vector<std::string_view>& whatif_setting_names() {
  static const std::vector<std::string_view> names = {"family",
                                                      "layers",
                                                      "d_model",
                                                      "heads",
                                                      "ffn",
                                                      "seq",
                                                      "vocab",
                                                      "depth",
                                                      "width",
                                                      "image",
                                                      "width_divisor",
                                                      "classes",
                                                      "tied_embeddings",
                                                      "devices",
                                                      "device",
                                                      "devices_per_node",
                                                      "intra_node",
                                                      "interconnect",
                                                      "free_transfers",
                                                      "batch",
                                                      "micro_batches",
                                                      "schedule",
                                                      "recompute",
                                                      "optimizer",
                                                      "partitioner",
                                                      "bf16",
                                                      "efficiency"};
  return names;
}

bool is_whatif_setting(std::string_view name) {
  const auto& n = whatif_setting_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

void apply_setting(WhatifConfig& c, std::string_view name, const Json& v, const std::string& path) {
  namespace lim = models::limits;
  if (name == "family") c.family = as_string(v, path);
  else if (name == "layers") c.layers = as_int(v, path, lim::kLayers.min, lim::kLayers.max);
  else if (name == "d_model") c.d_model = as_int(v, path, 1);
  else if (name == "heads") c.heads = as_int(v, path, 1);
  else if (name == "ffn") c.ffn = as_int(v, path, 0);
  else if (name == "seq") c.seq = as_int(v, path, 1);
  else if (name == "vocab") c.vocab = as_int(v, path, 1);
  else if (name == "depth") c.depth = as_int(v, path, lim::kLayers.min, lim::kLayers.max);
  else if (name == "width") c.width = as_int(v, path, 1);
  else if (name == "image") c.image = as_int(v, path, 1);
  else if (name == "width_divisor") c.width_divisor = as_int(v, path, 1);
  else if (name == "classes") c.classes = as_int(v, path, 1);
  else if (name == "tied_embeddings") c.tied_embeddings = as_bool(v, path);
  else if (name == "devices") c.devices = static_cast<int>(as_int(v, path, lim::kDevices.min, lim::kDevices.max));
  else if (name == "device") c.device = as_string(v, path);
  else if (name == "devices_per_node")
    c.devices_per_node = static_cast<int>(as_int(v, path, lim::kDevicesPerNode.min, lim::kDevicesPerNode.max));
  else if (name == "intra_node") c.intra_node = as_string(v, path);
  else if (name == "interconnect") c.interconnect = as_string(v, path);
  else if (name == "free_transfers") c.free_transfers = as_bool(v, path);
  else if (name == "batch") c.batch = as_int(v, path, 1, int64_t{1} << 22);  // 4M samples: simulated in seconds
  else if (name == "micro_batches") {
    if (v.is_string() && v.get<std::string>() == "auto") c.micro_batches = "auto";
    else if (v.is_number())
      c.micro_batches = std::to_string(as_int(v, path, lim::kMicroBatches.min, lim::kMicroBatches.max));
    else bad(path, "\"auto\" or an integer >= 1", v);
  } else if (name == "schedule") c.schedule = as_string(v, path);
  else if (name == "recompute") {
    if (v.is_boolean()) c.recompute = v.get<bool>() ? "on" : "off";
    else c.recompute = one_of(v, path, {"auto", "on", "off"});
  } else if (name == "optimizer") c.optimizer = as_string(v, path);
  else if (name == "partitioner") c.partitioner = one_of(v, path, {"dp", "gpipe-greedy", "even"});
  else if (name == "bf16") c.bf16 = as_bool(v, path);
  else if (name == "efficiency") {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 1)
      bad(path, "a number in [0, 1] (0: the device's GEMM curve)", v);
    c.efficiency = v.get<double>();
  } else {
    throw InputError(path + ": unknown setting \"" + std::string(name) + "\" (known: " + known_list() + ")");
  }
}

Json setting_value(const WhatifConfig& c, std::string_view name) {
  if (name == "family") return c.family;
  if (name == "layers") return c.layers;
  if (name == "d_model") return c.d_model;
  if (name == "heads") return c.heads;
  if (name == "ffn") return c.ffn;
  if (name == "seq") return c.seq;
  if (name == "vocab") return c.vocab;
  if (name == "depth") return c.depth;
  if (name == "width") return c.width;
  if (name == "image") return c.image;
  if (name == "width_divisor") return c.width_divisor;
  if (name == "classes") return c.classes;
  if (name == "tied_embeddings") return c.tied_embeddings;
  if (name == "devices") return c.devices;
  if (name == "device") return c.device;
  if (name == "devices_per_node") return c.devices_per_node;
  if (name == "intra_node") return c.intra_node;
  if (name == "interconnect") return c.interconnect;
  if (name == "free_transfers") return c.free_transfers;
  if (name == "batch") return c.batch;
  if (name == "micro_batches") {
    if (c.micro_batches == "auto") return c.micro_batches;
    return std::stoll(c.micro_batches);
  }
  if (name == "schedule") return c.schedule;
  if (name == "recompute") return c.recompute;
  if (name == "optimizer") return c.optimizer;
  if (name == "partitioner") return c.partitioner;
  if (name == "bf16") return whatif_bf16(c);
  if (name == "efficiency") return c.efficiency;
  PW_CHECK(false, "unknown what-if setting " + std::string(name));
  return nullptr;
}

Json to_json(const WhatifConfig& c) {
  Json j = Json::object();
  for (std::string_view n : whatif_setting_names()) j[std::string(n)] = setting_value(c, n);
  return j;
}

WhatifConfig config_from_json(const Json& j, const std::string& path) {
  require_object(j, path);
  WhatifConfig c;
  for (const auto& [key, value] : j.items()) apply_setting(c, key, value, join_path(path, key));
  return c;
}

void check_catalog_name(std::string_view setting, const std::string& value) {
  if (setting == "family") {
    const auto& fams = models::zoo_families();
    if (std::find(fams.begin(), fams.end(), value) != fams.end()) return;
    std::string list;
    for (std::string_view f : fams) list += (list.empty() ? "" : ", ") + std::string(f);
    throw InputError("unknown model family \"" + escape_for_message(value) + "\" (known: " + list + ")");
  }
  if (setting == "device") models::find_device(value);
  else if (setting == "intra_node" || setting == "interconnect") models::find_link(value);
  else if (setting == "optimizer") models::find_optimizer(value);
  else if (setting == "schedule") planner::parse_schedule_kind(value, "schedule");
  else PW_CHECK(false, "not a catalog setting: " + std::string(setting));
}

void validate_config(const WhatifConfig& c, const std::string& where) {
  auto prefix = [&](const std::string& setting) { return where.empty() ? setting : where + ": " + setting; };
  const std::pair<const char*, const std::string*> names[] = {
      {"family", &c.family},         {"device", &c.device},
      {"intra_node", &c.intra_node}, {"interconnect", &c.interconnect},
      {"optimizer", &c.optimizer},   {"schedule", &c.schedule}};
  for (const auto& [setting, value] : names) {
    try {
      check_catalog_name(setting, *value);
    } catch (const InputError& e) {
      std::string msg = e.what();
      if (msg.rfind("schedule: ", 0) == 0) msg = msg.substr(10);
      throw InputError(prefix(setting) + ": " + msg);
    }
  }
  if (c.family == "gpt" && c.d_model % c.heads != 0)
    throw InputError(prefix("d_model") + ": " + std::to_string(c.d_model) +
                     " is not divisible by heads = " + std::to_string(c.heads));
}

bool whatif_bf16(const WhatifConfig& c) {
  return c.bf16.has_value() ? *c.bf16 : models::default_bf16(models::find_device(c.device));
}

std::string whatif_optimizer(const WhatifConfig& c) { return models::priced_optimizer(c.optimizer, whatif_bf16(c)); }

int micro_batch_count(const WhatifConfig& c) {
  return c.micro_batches == "auto" ? 0 : static_cast<int>(std::stoll(c.micro_batches));
}

}  // namespace pw::whatif
