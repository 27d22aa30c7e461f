// models/model_source.h: a model or device named by a user resolves to the same thing from every
// command; bad names and bad files are refused in one line naming the flag or the file.
#include "models/model_source.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "models/error.h"

namespace pw::models {
namespace {

TEST_CASE("resolve_model: zoo families, the default model, files, and what it refuses") {
  CHECK(is_zoo_name("gpt"));
  CHECK(is_zoo_name("default"));
  CHECK_FALSE(is_zoo_name("gtp"));
  ZooOptions o;
  o.layers = 2;
  const ModelSource gpt = resolve_model("gpt", o, "--model");
  CHECK(gpt.family == "gpt");
  CHECK(gpt.file.empty());
  CHECK(gpt.model.layers().size() == build_zoo_model("gpt", o).layers().size());
  CHECK(resolve_model("default", o, "--model").family == "gpt");
  CHECK_THROWS_WITH_AS(resolve_model("no-such-thing", o, "--model"),
                       doctest::Contains("--model: \"no-such-thing\" is neither a model family (gpt"), InputError);

  const std::string file = (std::filesystem::temp_directory_path() / "pw_model_source_test.json").string();
  {
    std::ofstream f(file);
    f << Json(gpt.model).dump();
  }
  const ModelSource from_file = resolve_model(file, o, "--model");
  CHECK(from_file.file == file);
  CHECK(from_file.family.empty());
  CHECK(Json(from_file.model) == Json(gpt.model));
  std::remove(file.c_str());
}

TEST_CASE("model_from_document: an embedded model's errors name where it is embedded") {
  ZooOptions o;
  o.layers = 1;
  Json doc = build_zoo_model("gpt", o);
  CHECK(model_from_document(doc, "plan.json: /inputs/model").file == "plan.json: /inputs/model");
  doc["layers"] = 5;
  CHECK_THROWS_WITH_AS(model_from_document(doc, "plan.json: /inputs/model"),
                       doctest::Contains("plan.json: /inputs/model/layers"), InputError);
}

TEST_CASE("resolve_device: the catalog by name, and an unknown name listing it") {
  CHECK(resolve_device("a100-80g", "--device").name == "a100-80g");
  CHECK_THROWS_WITH_AS(resolve_device("a100-81g", "--device"), doctest::Contains("--device: "), InputError);
}

}  // namespace
}  // namespace pw::models
