// Where a model or a device named by a user comes from: a zoo family, the main job's built-in
// model, a model JSON file, a model document embedded in another file (a plan's inputs), a
// catalog device or a device JSON file. Every command and library that takes such a name
// resolves it here, so that a name means the same model everywhere.
#pragma once

#include <string>

#include "models/device.h"
#include "models/json_util.h"
#include "models/layer_graph.h"
#include "models/zoo.h"

namespace pw::models {

struct ModelSource {
  Model model;
  std::string family;  // zoo family ("gpt", ...), empty when read from a file
  std::string file;    // the model file, empty for a zoo model
};

// True for the zoo families and "default" (the main job's built-in model).
bool is_zoo_name(const std::string& spec);

// `spec` is a zoo family (built with `options`), "default", or a model JSON file. A file's
// layers are checked against the cost model's attribute rules (opaque layers excepted), errors
// prefixed with the file name. Throws InputError naming `flag` when `spec` is none of these.
ModelSource resolve_model(const std::string& spec, const ZooOptions& options, const std::string& flag);

// A model JSON document embedded elsewhere (a plan's inputs), checked as a model file is;
// errors are prefixed with `where` ("plan.json: /inputs/model").
ModelSource model_from_document(const Json& doc, const std::string& where);

// A catalog device name, or a device JSON file ({"name", "peak_fp32_flops", ...}).
// Errors are prefixed with `flag`.
DeviceSpec resolve_device(const std::string& spec, const std::string& flag);

}  // namespace pw::models
