// Shared by the `model`, `profile` and `demo` subcommands: resolving a model or device named on
// the command line, and rendering models and profiles as text tables or JSON summaries.
// Output is deterministic (fixed formats, no locale, no timestamps).
#pragma once

#include <iosfwd>
#include <string>

#include "models/device.h"
#include "models/human_units.h"
#include "models/json_util.h"
#include "models/layer_graph.h"
#include "models/profile.h"
#include "models/zoo.h"

namespace pw::tools {

struct ModelSource {
  models::Model model;
  std::string family;  // zoo family ("gpt", ...), empty when read from a file
  std::string file;    // the model file, empty for a zoo model
};

// True for the zoo families and "default" (the main job's built-in model).
bool is_zoo_name(const std::string& spec);

// `spec` is a zoo family (built with `options`), "default", or a model JSON file. A file's
// layers are checked against the cost model's attribute rules (opaque layers excepted), errors
// prefixed with the file name. Throws InputError naming `flag` when `spec` is none of these.
ModelSource resolve_model(const std::string& spec, const models::ZooOptions& options,
                          const std::string& flag);

// A model JSON document embedded elsewhere (a plan's inputs), checked as a model file is;
// errors are prefixed with `where` ("plan.json: /inputs/model").
ModelSource model_from_document(const Json& doc, const std::string& where);

// A catalog device name, or a device JSON file ({"name", "peak_fp32_flops", ...}).
// Errors are prefixed with `flag`.
models::DeviceSpec resolve_device(const std::string& spec, const std::string& flag);

// "1.23 G"-style counts (SI prefixes, 3 significant digits); sizes: models/human_units.h.
std::string human_count(double n);
using models::human_bytes;

// Summary lines (name, family, batch, layers, parameters, FLOPs per sample) and a per-layer table.
void print_model_summary(std::ostream& os, const ModelSource& src);
void print_model_layers(std::ostream& os, const models::Model& model);
// {"family", "name", "file", "batch", "layers", "parameters", "parameter_bytes_fp32",
//  "forward_flops_per_sample", "flops_per_sample", "edges"}; family/file null when absent.
Json model_summary_json(const ModelSource& src);

// Per-layer table (times in microseconds, sizes in bytes with binary prefixes) and totals.
void print_profile(std::ostream& os, const models::Profile& profile);

}  // namespace pw::tools
