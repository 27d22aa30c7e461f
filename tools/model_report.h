// Shared by the `model`, `profile` and `demo` subcommands: rendering models and profiles as text
// tables or JSON summaries.
// Output is deterministic (fixed formats, no locale, no timestamps).
#pragma once

#include <iosfwd>
#include <string>

#include "models/device.h"
#include "models/human_units.h"
#include "models/json_util.h"
#include "models/layer_graph.h"
#include "models/model_source.h"
#include "models/profile.h"
#include "models/zoo.h"

namespace pw::tools {

// Model and device resolution lives in models/model_source.h; the names stay usable here.
using models::is_zoo_name;
using models::model_from_document;
using models::ModelSource;
using models::resolve_device;
using models::resolve_model;

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
