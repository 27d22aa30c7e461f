#include "models/zoo.h"

#include <doctest/doctest.h>

#include "models/cost.h"
#include "models/error.h"

using namespace pw::models;
using pw::InputError;
using pw::Json;

namespace {

int64_t gpt_closed_form(int64_t l, int64_t h, int64_t f, int64_t s, int64_t V, bool tied) {
  return l * (4 * h * h + 2 * h * f + f + 9 * h) + V * h + s * h + 2 * h + (tied ? 0 : h * V);
}

ZooOptions gpt_options(int64_t l, int64_t h, int64_t a, int64_t f, int64_t s, int64_t V) {
  ZooOptions o;
  o.layers = l;
  o.d_model = h;
  o.heads = a;
  o.ffn = f;
  o.seq = s;
  o.vocab = V;
  return o;
}

int count_kind(const Model& m, LayerKind kind) {
  int n = 0;
  for (const LayerSpec& l : m.layers()) n += l.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("gpt layers follow the documented conventions") {
  Model m = default_model();
  CHECK(m.batch() == 16);
  REQUIRE(m.size() == 9);  // input, embedding, 4 blocks, final_norm, lm_head, loss
  const auto& L = m.layers();
  CHECK(L[0].name == "input");
  CHECK(L[0].kind == LayerKind::input);
  CHECK(L[0].output_shape == std::vector<int64_t>{64});
  CHECK(L[0].attrs == std::map<std::string, int64_t>{{"seq", 64}, {"vocab", 256}});
  CHECK(L[1].name == "embedding");
  CHECK(L[1].output_shape == std::vector<int64_t>{64, 128});
  CHECK(L[1].attrs == std::map<std::string, int64_t>{{"vocab", 256}, {"seq", 64}, {"d_model", 128}});
  for (int i = 0; i < 4; ++i) {
    CHECK(L[2 + i].name == "block" + std::to_string(i));
    CHECK(L[2 + i].kind == LayerKind::transformer_block);
    CHECK(L[2 + i].attrs == std::map<std::string, int64_t>{{"seq", 64}, {"d_model", 128}, {"heads", 4}, {"ffn", 512}});
  }
  CHECK(L[6].name == "final_norm");
  CHECK(L[6].attrs == std::map<std::string, int64_t>{{"dim", 128}});
  CHECK(L[7].name == "lm_head");
  CHECK(L[7].output_shape == std::vector<int64_t>{64, 256});
  CHECK(L[7].attr("tied") == 0);
  CHECK(L[8].name == "loss");
  CHECK(L[8].kind == LayerKind::softmax_xent);
  CHECK(L[8].output_shape == std::vector<int64_t>{1});
  CHECK(L[8].attrs == std::map<std::string, int64_t>{{"rows", 64}, {"classes", 256}});
  CHECK(m.edges().size() == 8);
  CHECK(model_parameter_count(m) == gpt_closed_form(4, 128, 512, 64, 256, false));
}

TEST_CASE("gpt parameter count equals the closed form") {
  ZooOptions o = gpt_options(48, 2048, 32, 8192, 1024, 32000);
  Model m = build_zoo_model("gpt", o);
  CHECK(model_parameter_count(m) == gpt_closed_form(48, 2048, 8192, 1024, 32000, false));
  CHECK(model_parameter_count(m) == 2550370304LL);  // 48 * 50,358,272 + 2 * 65,536,000 + 2,101,248
  // ffn 0 means 4 * d_model.
  CHECK(model_parameter_count(build_zoo_model("gpt", gpt_options(2, 64, 4, 0, 16, 100))) ==
        gpt_closed_form(2, 64, 256, 16, 100, false));
}

TEST_CASE("gpt with tied embeddings matches Megatron-LM's parameter formula plus the final norm") {
  const int64_t l = 24, h = 1024, s = 2048, V = 51200;
  ZooOptions o = gpt_options(l, h, 16, 0, s, V);
  o.tied_embeddings = true;
  Model m = build_zoo_model("gpt", o);
  CHECK(m.layers()[m.index_of("lm_head")].attr("tied") == 1);
  CHECK(layer_parameter_count(m.layers()[m.index_of("lm_head")]) == 0);
  // 12*l*h^2*(1 + 13/(12h) + (V+s)/(12*l*h)) = 12lh^2 + 13lh + (V+s)h; the formula omits the final
  // layer norm's 2h.
  CHECK(model_parameter_count(m) == 12 * l * h * h + 13 * l * h + (V + s) * h + 2 * h);
}

TEST_CASE("mlp is a chain of linear layers with relu between") {
  ZooOptions o;
  o.depth = 3;
  o.width = 16;
  o.batch = 5;
  Model m = build_zoo_model("mlp", o);
  std::vector<std::string> names;
  for (const auto& l : m.layers()) names.push_back(l.name);
  CHECK(names == std::vector<std::string>{"input", "fc0", "relu0", "fc1", "relu1", "fc2", "loss"});
  CHECK(m.layers()[1].attrs == std::map<std::string, int64_t>{{"in", 16}, {"out", 16}, {"bias", 1}});
  CHECK(m.layers()[6].kind == LayerKind::mse_loss);
  CHECK(m.layers()[6].attr("dim") == 16);
  CHECK(m.batch() == 5);
  CHECK(model_parameter_count(m) == 3 * (16 * 16 + 16));
}

TEST_CASE("vgg16 has torchvision's parameter count and a small variant builds") {
  ZooOptions o;
  Model m = build_zoo_model("vgg16", o);
  CHECK(count_kind(m, LayerKind::conv2d) == 13);
  CHECK(count_kind(m, LayerKind::max_pool) == 5);
  CHECK(count_kind(m, LayerKind::linear) == 3);
  CHECK(model_parameter_count(m) == 138357544);
  const LayerSpec& c = m.layers()[m.index_of("conv1_1")];
  CHECK(c.attrs == std::map<std::string, int64_t>{{"in_c", 3},
                                                  {"out_c", 64},
                                                  {"kernel", 3},
                                                  {"stride", 1},
                                                  {"pad", 1},
                                                  {"in_h", 224},
                                                  {"in_w", 224},
                                                  {"bias", 1}});
  CHECK(m.layers()[m.index_of("pool5")].output_shape == std::vector<int64_t>{512, 7, 7});
  CHECK(m.layers()[m.index_of("fc6")].attr("in") == 512 * 7 * 7);

  o.image = 32;
  o.width_divisor = 8;
  o.classes = 10;
  Model small = build_zoo_model("vgg16", o);
  CHECK(small.size() == 39);
  CHECK(small.layers()[small.index_of("pool5")].output_shape == std::vector<int64_t>{64, 1, 1});
  CHECK(small.layers()[small.index_of("fc8")].attrs ==
        std::map<std::string, int64_t>{{"in", 512}, {"out", 10}, {"bias", 1}});
  // convs: 224 + 584 + 1168 + 2320 + 4640 + 2*9248 + 18496 + 5*36928; fcs: 33280 + 262656 + 5130.
  CHECK(model_parameter_count(small) == 531634);
}

TEST_CASE("resnet50 is a DAG with projection shortcuts and torchvision's parameter count") {
  Model m = build_zoo_model("resnet50", ZooOptions{});
  CHECK(count_kind(m, LayerKind::residual_add) == 16);
  CHECK(count_kind(m, LayerKind::conv2d) == 53);
  CHECK(model_parameter_count(m) == 25557032);
  CHECK(m.edges().size() == m.size() - 1 + 16);  // a chain plus one skip edge per block
  const LayerSpec& add = m.layers()[m.index_of("s2b0_add")];
  CHECK(add.inputs == std::vector<std::string>{"s2b0_bn_c", "s2b0_bn_proj"});
  CHECK(add.output_shape == std::vector<int64_t>{512, 28, 28});
  CHECK(m.layers()[m.index_of("s2b1_add")].inputs == std::vector<std::string>{"s2b1_bn_c", "s2b0_out"});
  CHECK(m.layers()[m.index_of("avg_pool")].output_shape == std::vector<int64_t>{2048, 1, 1});
  CHECK(m.layers()[m.index_of("fc")].attrs == std::map<std::string, int64_t>{{"in", 2048}, {"out", 1000}, {"bias", 1}});
}

TEST_CASE("densenet121 concatenates features and has torchvision's parameter count") {
  Model m = build_zoo_model("densenet121", ZooOptions{});
  CHECK(count_kind(m, LayerKind::concat) == 58);
  CHECK(count_kind(m, LayerKind::conv2d) == 120);
  CHECK(model_parameter_count(m) == 7978856);
  const LayerSpec& cat = m.layers()[m.index_of("d1l1_cat")];
  CHECK(cat.inputs == std::vector<std::string>{"d1l0_cat", "d1l1_conv_b"});
  CHECK(cat.output_shape == std::vector<int64_t>{128, 56, 56});
  CHECK(m.layers()[m.index_of("t1_pool")].output_shape == std::vector<int64_t>{128, 28, 28});
  CHECK(m.layers()[m.index_of("fc")].attrs == std::map<std::string, int64_t>{{"in", 1024}, {"out", 1000}, {"bias", 1}});
}

TEST_CASE("vgg16 with dropout: drop6 and drop7 follow relu6 and relu7") {
  ZooOptions o;
  o.image = 32;
  o.width_divisor = 8;
  o.dropout_permille = 500;
  Model m = build_zoo_model("vgg16", o);
  CHECK(count_kind(m, LayerKind::dropout) == 2);
  CHECK(m.layers()[m.index_of("drop6")].inputs == std::vector<std::string>{"relu6"});
  CHECK(m.layers()[m.index_of("fc7")].inputs == std::vector<std::string>{"drop6"});
  CHECK(m.layers()[m.index_of("drop7")].attrs == std::map<std::string, int64_t>{{"permille", 500}});
  o.dropout_permille = 1000;
  CHECK_THROWS_WITH_AS(build_zoo_model("vgg16", o), doctest::Contains("--dropout-permille"), InputError);
}

TEST_CASE("every zoo family survives a JSON round trip") {
  ZooOptions o;
  o.layers = 2;
  o.d_model = 64;
  o.heads = 2;
  o.seq = 8;
  o.vocab = 50;
  o.image = 32;
  o.width_divisor = 16;
  o.classes = 10;
  for (auto family : zoo_families()) {
    CAPTURE(family);
    Model m = build_zoo_model(family, o);
    Json j = m;
    Model back = model_from_json(j);
    CHECK(Json(back) == j);
    CHECK(back.edges() == m.edges());
    CHECK(model_parameter_count(back) == model_parameter_count(m));
  }
}

TEST_CASE("impossible zoo sizes are rejected naming the option") {
  ZooOptions o = gpt_options(2, 100, 3, 0, 8, 10);
  CHECK_THROWS_WITH_AS(build_zoo_model("gpt", o), "--d-model: 100 is not divisible by --heads 3", InputError);
  o = gpt_options(0, 64, 4, 0, 8, 10);
  CHECK_THROWS_WITH_AS(build_zoo_model("gpt", o), doctest::Contains("--layers: expected an integer in [1"), InputError);
  o = gpt_options(2, 64, 4, 0, 8, 10);
  o.batch = 0;
  CHECK_THROWS_WITH_AS(build_zoo_model("gpt", o), doctest::Contains("--batch"), InputError);
  o = ZooOptions{};
  o.image = 16;
  CHECK_THROWS_WITH_AS(build_zoo_model("vgg16", o), doctest::Contains("--image"), InputError);
  o = ZooOptions{};
  o.width_divisor = 128;
  CHECK_THROWS_WITH_AS(build_zoo_model("resnet50", o), doctest::Contains("--width-divisor"), InputError);
  o = ZooOptions{};
  o.width = -3;
  CHECK_THROWS_WITH_AS(build_zoo_model("mlp", o), doctest::Contains("--width"), InputError);
  CHECK_THROWS_WITH_AS(build_zoo_model("alexnet", o),
                       "unknown model family \"alexnet\" (known: gpt, mlp, vgg16, resnet50, densenet121)", InputError);
}
