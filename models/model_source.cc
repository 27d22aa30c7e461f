#include "models/model_source.h"

#include <filesystem>

#include "models/cost.h"
#include "models/error.h"

namespace pw::models {

bool is_zoo_name(const std::string& spec) {
  if (spec == "default") return true;
  for (auto f : zoo_families())
    if (f == spec) return true;
  return false;
}

namespace {

// Attributes the cost model needs (and their agreement with output_shape) are checked here,
// so that such errors name the file like the JSON errors do. Opaque layers are left to the
// consumer (they have no attrs to check; whether they are usable depends on the command).
void check_costable(const Model& model, const std::string& where) {
  try {
    for (const LayerSpec& l : model.layers())
      if (l.kind != LayerKind::opaque) layer_cost(l, 1);
  } catch (const InputError& e) { throw InputError(where + ": " + e.what()); }
}

}  // namespace

ModelSource resolve_model(const std::string& spec, const ZooOptions& options, const std::string& flag) {
  ModelSource src;
  if (spec == "default") {
    src.model = default_model();
    src.family = "gpt";
    return src;
  }
  if (is_zoo_name(spec)) {
    src.model = build_zoo_model(spec, options);
    src.family = spec;
    return src;
  }
  std::error_code ec;
  if (!std::filesystem::exists(spec, ec)) {
    std::string known;
    for (auto f : zoo_families()) known += std::string(f) + ", ";
    throw InputError(flag + ": \"" + spec + "\" is neither a model family (" + known +
                     "default) nor an existing model file");
  }
  src.model = load_model_file(spec);
  src.file = spec;
  check_costable(src.model, spec);
  return src;
}

ModelSource model_from_document(const Json& doc, const std::string& where) {
  ModelSource src;
  try {
    src.model = model_from_json(doc);
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(where + (what.rfind('/', 0) == 0 ? "" : ": ") + what);
  }
  src.file = where;
  check_costable(src.model, where);
  return src;
}

DeviceSpec resolve_device(const std::string& spec, const std::string& flag) {
  try {
    for (const auto& d : device_catalog())
      if (d.name == spec) return d;
    std::error_code ec;
    if (std::filesystem::is_regular_file(spec, ec))
      return parse_json_file<DeviceSpec>(spec, [](const Json& j) { return device_from_json(j, ""); });
    return find_device(spec);  // throws, listing the catalog
  } catch (const InputError& e) { throw InputError(flag + ": " + e.what()); }
}

}  // namespace pw::models
