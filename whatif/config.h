// One what-if configuration: a model of a zoo family at a size, a cluster of identical
// devices, and the planner's knobs. Shared by `whatif max-model`, `whatif throughput` and
// `whatif sweep`, whose spec files name the same settings as the JSON keys below.
//
// Settings (JSON key: type, default):
//   family "gpt" | "mlp" | "vgg16" | "resnet50" | "densenet121" (models::zoo_families());
//   model sizes (integers >= 1): layers 12, d_model 768, heads 12, ffn 0 (= 4*d_model),
//     seq 1024, vocab 50257, depth 4, width 1024, image 224, width_divisor 1, classes 1000;
//   tied_embeddings bool, false (as the model builder; Megatron-LM's GPT ties them);
//   devices >= 1 (8); device: a device catalog name ("a100-80g");
//   devices_per_node >= 1 (8): devices joined by `intra_node` (a link name, "nvlink3");
//   interconnect: the link joining nodes ("ib-100g"); used only when devices > devices_per_node;
//   free_transfers bool (false): every transfer between devices costs nothing;
//   batch >= 1 samples per mini-batch (64); micro_batches: "auto" or an integer >= 1;
//   schedule: a ScheduleKind name ("1f1b"); recompute "auto" | "on" | "off" (JSON true/false
//   accepted as "on"/"off"; "auto" recomputes only the stages whose memory requires it);
//   optimizer: an optimizer catalog name ("adam"; under bf16 priced as "adam-mixed", as `plan`
//   prices it); partitioner "dp" | "gpipe-greedy" | "even"; bf16 bool (unset: true on an
//   accelerator, false on a CPU device, models::default_dtype): compute at the 16-bit tensor
//   rate; efficiency [0, 1] (0: the device's GEMM curve where it has one, else 0.5; models/defaults.h).
// The cost defaults (recompute, precision, optimizer, efficiency) are models/defaults.h's, the
// ones `plan` uses: the same question gets the same answer from both.
//
// Value checks here are syntactic (types, ranges, one of a fixed list); names that live in
// catalogs (device, links, optimizer, schedule) are checked by validate_config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/defaults.h"
#include "models/json_util.h"

namespace pw::whatif {

struct WhatifConfig {
  std::string family = "gpt";
  int64_t layers = 12;
  int64_t d_model = 768;
  int64_t heads = 12;
  int64_t ffn = 0;
  int64_t seq = 1024;
  int64_t vocab = 50257;
  int64_t depth = 4;
  int64_t width = 1024;
  int64_t image = 224;
  int64_t width_divisor = 1;
  int64_t classes = 1000;
  bool tied_embeddings = false;

  int devices = 8;
  std::string device = models::kDefaultDevice;
  int devices_per_node = models::kDefaultDevicesPerNode;
  std::string intra_node = models::kDefaultIntraNode;
  std::string interconnect = models::kDefaultInterconnect;
  bool free_transfers = false;  // every transfer costs 0 ns (idealized, as in GPipe's tables)

  int64_t batch = 64;
  std::string micro_batches = "auto";  // "auto" or a positive integer in decimal
  std::string schedule = "1f1b";
  std::string recompute = models::kDefaultRecompute;  // "auto", "on", "off"
  std::string optimizer = models::kDefaultOptimizer;  // as given; whatif_optimizer prices it
  std::string partitioner = "dp";
  std::optional<bool> bf16;  // unset: models::default_bf16(device); see whatif_bf16
  double efficiency = models::kDefaultEfficiency;
};

// Every setting name, in the canonical order used for sweep axes and table columns.
const std::vector<std::string_view>& whatif_setting_names();
bool is_whatif_setting(std::string_view name);

// Sets one setting from a JSON value; `path` names the value in messages. Throws InputError
// ("<path>: expected <what>, got <value>") for a wrong type or range, and
// ("<path>: unknown setting \"x\" (known: ...)") for an unknown name.
void apply_setting(WhatifConfig& c, std::string_view name, const Json& value, const std::string& path);
// The setting's current value as JSON (integers, strings, booleans; micro_batches as a
// number when it is one).
Json setting_value(const WhatifConfig& c, std::string_view name);
Json to_json(const WhatifConfig& c);
// Reads the settings present in an object (absent ones keep their defaults).
WhatifConfig config_from_json(const Json& j, const std::string& path);

// Throws the catalog's InputError when `value` is not a known name for `setting` (one of
// family, device, intra_node, interconnect, optimizer, schedule).
void check_catalog_name(std::string_view setting, const std::string& value);
// Checks catalog names (device, links, optimizer, schedule, family) and cross-field rules;
// throws InputError naming `where` and the setting.
void validate_config(const WhatifConfig& c, const std::string& where);

// The precision priced: bf16 when set, else the device's default (models::default_bf16).
bool whatif_bf16(const WhatifConfig& c);
// The optimizer priced: models::priced_optimizer(optimizer, whatif_bf16(c)) ("adam" under
// bf16 is "adam-mixed").
std::string whatif_optimizer(const WhatifConfig& c);

// 0 for "auto", else the integer count.
int micro_batch_count(const WhatifConfig& c);

}  // namespace pw::whatif
