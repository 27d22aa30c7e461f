#include "models/layer_graph.h"

#include <doctest/doctest.h>

#include "models/error.h"

using namespace pw::models;
using pw::InputError;
using pw::Json;

static LayerSpec layer(std::string name, LayerKind kind, std::vector<std::string> inputs) {
  LayerSpec l;
  l.name = std::move(name);
  l.kind = kind;
  l.inputs = std::move(inputs);
  l.output_shape = {4};
  return l;
}

TEST_CASE("a model is put in topological order and keeps a valid order as given") {
  Model m("m", {layer("c", LayerKind::residual_add, {"a", "b"}), layer("a", LayerKind::input, {}),
                layer("b", LayerKind::relu, {"a"})});
  REQUIRE(m.size() == 3);
  CHECK(m.layers()[0].name == "a");
  CHECK(m.layers()[1].name == "b");
  CHECK(m.layers()[2].name == "c");
  CHECK(m.edges().size() == 3);
  for (const Edge& e : m.edges()) CHECK(e.from < e.to);
  CHECK(m.index_of("c") == 2);
  CHECK(m.index_of("zz") == -1);
}

TEST_CASE("bad graphs are rejected with the offending layer named") {
  CHECK_THROWS_WITH_AS(Model("m", {}), doctest::Contains("no layers"), InputError);
  CHECK_THROWS_WITH_AS(Model("m", {layer("a", LayerKind::input, {}), layer("b", LayerKind::relu, {"zz"})}),
                       "/layers/1/inputs/0: layer \"b\" reads unknown layer \"zz\"", InputError);
  CHECK_THROWS_WITH_AS(Model("m", {layer("a", LayerKind::relu, {"b"}), layer("b", LayerKind::relu, {"a"})}),
                       doctest::Contains("cycle"), InputError);
  CHECK_THROWS_WITH_AS(Model("m", {layer("a", LayerKind::input, {}), layer("a", LayerKind::relu, {})}),
                       doctest::Contains("duplicate"), InputError);
}

TEST_CASE("model JSON round trip, unknown kinds and wrong types") {
  LayerSpec lin = layer("fc", LayerKind::linear, {"x"});
  lin.attrs = {{"in", 4}, {"out", 8}};
  Model m("tiny", {layer("x", LayerKind::input, {}), lin}, 16);
  Json j = m;
  Model back = model_from_json(j);
  CHECK(back.name() == "tiny");
  CHECK(back.batch() == 16);
  CHECK(back.layers()[1].attr("out") == 8);
  CHECK(Json(back) == j);

  Json bad = j;
  bad["layers"][1]["kind"] = "convolution3d";
  CHECK_THROWS_WITH_AS(model_from_json(bad), doctest::Contains("/layers/1/kind: unknown layer kind \"convolution3d\""),
                       InputError);
  bad = j;
  bad["layers"][1]["attrs"]["in"] = "four";
  CHECK_THROWS_WITH_AS(model_from_json(bad), doctest::Contains("/layers/1/attrs/in: expected an integer"), InputError);
  bad = j;
  bad["layers"][0].erase("name");
  CHECK_THROWS_WITH_AS(model_from_json(bad), "/layers/0/name: missing required field", InputError);
  bad = j;
  bad["layers"][1]["output_shape"] = {-3};
  CHECK_THROWS_AS(model_from_json(bad), InputError);
  CHECK_THROWS_WITH_AS(lin.attr("kernel"), doctest::Contains("missing attribute \"kernel\""), InputError);
}

TEST_CASE("a layer attribute that means what a zoo flag means is held to that flag's range") {
  // Found by the CLI fuzz pass: an input layer's "seq" of 2^62 was read without a word.
  LayerSpec in = layer("x", LayerKind::input, {});
  in.attrs = {{"seq", 16}, {"vocab", 64}};
  Model m("tiny", {in}, 8);
  const Json j = m;
  CHECK(model_from_json(j).layers()[0].attr("seq") == 16);
  const struct {
    const char* key;
    int64_t value;
    const char* message;
  } cases[] = {
      {"seq", int64_t{1} << 62, "/layers/0/attrs/seq: expected an integer in [1, 1048576], got 4611686018427387904"},
      {"seq", 0, "/layers/0/attrs/seq: expected an integer in [1, 1048576], got 0"},
      {"vocab", int64_t{1} << 25, "/layers/0/attrs/vocab: expected an integer in [1, 16777216], got 33554432"},
      {"d_model", 1 << 18, "/layers/0/attrs/d_model: expected an integer in [1, 131072], got 262144"},
      {"heads", 1 << 15, "/layers/0/attrs/heads: expected an integer in [1, 16384], got 32768"},
      {"ffn", 1 << 20, "/layers/0/attrs/ffn: expected an integer in [0, 524288], got 1048576"},
      {"classes", int64_t{1} << 25, "/layers/0/attrs/classes: expected an integer in [1, 16777216], got 33554432"},
      {"in_h", 1 << 15, "/layers/0/attrs/in_h: expected an integer in [1, 16384], got 32768"},
  };
  for (const auto& c : cases) {
    Json bad = j;
    bad["layers"][0]["attrs"][c.key] = c.value;
    CHECK_THROWS_WITH_AS(model_from_json(bad), c.message, InputError);
  }
}

TEST_CASE("module paths and shared parameters: JSON round trip and bad references") {
  const Json j = Json::parse(R"({"format": "pipewright.model/1", "name": "twice", "layers": [
      {"name": "x", "kind": "input", "output_shape": [4]},
      {"name": "fc", "kind": "linear", "inputs": ["x"], "output_shape": [4], "attrs": {"in": 4, "out": 4}},
      {"name": "fc_1", "kind": "linear", "inputs": ["fc"], "output_shape": [4], "attrs": {"in": 4, "out": 4},
       "shares": "fc"},
      {"name": "out", "kind": "linear", "inputs": ["fc_1"], "output_shape": [2], "attrs": {"in": 4, "out": 2},
       "module": "head.out"}]})");
  const Model m = model_from_json(j);
  CHECK(m.layers()[2].shares == "fc");
  CHECK(m.layers()[3].module == "head.out");
  CHECK(m.layers()[1].module.empty());
  const Json back = m;
  CHECK(back["layers"][2]["shares"] == "fc");
  CHECK(back["layers"][3]["module"] == "head.out");
  CHECK_FALSE(back["layers"][1].contains("shares"));
  CHECK_FALSE(back["layers"][1].contains("module"));
  CHECK(model_from_json(back).layers()[2].shares == "fc");

  Json bad = j;
  bad["layers"][2]["shares"] = "nope";
  CHECK_THROWS_WITH_AS(model_from_json(bad),
                       "/layers/2/shares: layer \"fc_1\" shares the parameters of \"nope\", which is not another "
                       "layer of the model",
                       InputError);
  bad["layers"][2]["shares"] = "x";
  CHECK_THROWS_WITH_AS(model_from_json(bad),
                       "/layers/2/shares: layer \"fc_1\" shares the parameters of \"x\", which is not a layer of "
                       "the same kind that owns its parameters",
                       InputError);
  bad["layers"][2]["shares"] = "fc_1";
  CHECK_THROWS_WITH_AS(model_from_json(bad), doctest::Contains("which is not another layer of the model"), InputError);
  bad["layers"][2]["shares"] = 3;
  CHECK_THROWS_AS(model_from_json(bad), InputError);
}
