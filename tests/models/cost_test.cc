#include "models/cost.h"

#include <doctest/doctest.h>

#include "models/error.h"
#include "models/optimizer_memory.h"
#include "models/zoo.h"

using namespace pw::models;
using pw::InputError;
using pw::Json;

namespace {

LayerSpec spec(std::string name, LayerKind kind, std::vector<int64_t> shape, std::map<std::string, int64_t> attrs) {
  LayerSpec l;
  l.name = std::move(name);
  l.kind = kind;
  l.output_shape = std::move(shape);
  l.attrs = std::move(attrs);
  return l;
}

// Peak 1 TFLOP/s, 1 TB/s: at efficiency 0.5, 1 FLOP costs 2 ps and 1 byte 1 ps.
DeviceSpec test_device() { return {"test", 1e12, 2e12, 1e12, int64_t{1} << 30, "unit test"}; }

Model chain(std::vector<LayerSpec> layers) {
  for (size_t i = 1; i < layers.size(); ++i) layers[i].inputs = {layers[i - 1].name};
  return Model("chain", std::move(layers));
}

}  // namespace

TEST_CASE("linear layer FLOPs and bytes by hand") {
  LayerSpec fc = spec("fc", LayerKind::linear, {5}, {{"in", 3}, {"out", 5}});
  LayerCost c = layer_cost(fc, 2);
  CHECK(c.forward_flops == 60);  // 2 * B * in * out
  CHECK(c.backward_input_flops == 60);
  CHECK(c.backward_weight_flops == 60);
  CHECK(layer_parameter_count(fc) == 20);  // bias defaults to 1
  CHECK(c.parameter_bytes == 80);
  CHECK(c.output_bytes == 40);  // 2 * 5 * 4
  CHECK(c.stash_bytes == 24);   // its input, 2 * 3 * 4
  CHECK(c.forward_mem_bytes == (6 + 10) * 4 + 80);
  CHECK(c.backward_mem_bytes == 10 * 4 + 24 + 6 * 4 + 2 * 80);

  // Over a [seq, d] input the other dims are rows.
  LayerSpec rows = spec("fc", LayerKind::linear, {4, 5}, {{"in", 3}, {"out", 5}, {"bias", 0}});
  CHECK(layer_cost(rows, 2).forward_flops == 2 * 2 * 4 * 3 * 5);
  CHECK(layer_parameter_count(rows) == 15);
  CHECK(layer_cost(rows, 2, 2).output_bytes == 2 * 4 * 5 * 2);

  LayerSpec wrong = spec("fc", LayerKind::linear, {4}, {{"in", 3}, {"out", 5}});
  CHECK_THROWS_WITH_AS(layer_cost(wrong, 1),
                       doctest::Contains("layer \"fc\" (linear): output_shape [4] must end in out = 5"), InputError);
}

TEST_CASE("conv2d FLOPs by hand") {
  LayerSpec conv =
      spec("c", LayerKind::conv2d, {8, 32, 32},
           {{"in_c", 3}, {"out_c", 8}, {"kernel", 3}, {"stride", 1}, {"pad", 1}, {"in_h", 32}, {"in_w", 32}});
  LayerCost c = layer_cost(conv, 1);
  CHECK(c.forward_flops == 2.0 * 8 * 32 * 32 * 3 * 9);
  CHECK(c.forward_flops == 442368);
  CHECK(c.backward_input_flops == 442368);
  CHECK(c.backward_weight_flops == 442368);
  CHECK(layer_parameter_count(conv) == 8 * 3 * 9 + 8);
  CHECK(c.stash_bytes == 3 * 32 * 32 * 4);
  CHECK(c.output_bytes == 8 * 32 * 32 * 4);

  LayerSpec strided = conv;
  strided.attrs["stride"] = 2;
  strided.output_shape = {8, 16, 16};
  CHECK(layer_cost(strided, 3).forward_flops == 3 * 2.0 * 8 * 16 * 16 * 27);
  strided.output_shape = {8, 32, 32};
  CHECK_THROWS_WITH_AS(layer_cost(strided, 1), doctest::Contains("does not match its attrs (expected [8, 16, 16])"),
                       InputError);
}

TEST_CASE("roofline takes the larger of compute and memory time") {
  CHECK(roofline_ns(2e9, 1e6, 1e12, 1e9) == 2000000);  // compute: 2 ms > 1 ms
  CHECK(roofline_ns(2e9, 5e6, 1e12, 1e9) == 5000000);  // memory: 5 ms > 2 ms
  CHECK(roofline_ns(0, 0, 1e12, 1e9) == 0);

  // A large linear layer is compute bound, a relu memory bound.
  Model m = chain({spec("x", LayerKind::input, {1024}, {}),
                   spec("fc", LayerKind::linear, {1024}, {{"in", 1024}, {"out", 1024}}),
                   spec("r", LayerKind::relu, {1024}, {})});
  Profile p = analytic_profile(m, test_device(), 256, {0.5, false, "sgd"});
  const LayerProfile& fc = p.layers[1];
  CHECK(fc.forward_ns == 1073742);         // 2*256*1024^2 FLOP / 5e11 = 1073741.8 ns > 6296 ns of bytes
  CHECK(fc.backward_input_ns == 1073742);  // half of llround(2147483.6)
  CHECK(fc.backward_weight_ns == 1073742);
  const LayerProfile& r = p.layers[2];
  CHECK(r.forward_ns == 2097);  // 2 * 262144 * 4 bytes / 1e12 > 262144 FLOP / 5e11
  CHECK(r.backward_weight_ns == 0);
}

TEST_CASE("transformer block and head FLOPs reproduce Megatron-LM's per-iteration formula") {
  const int64_t l = 4, h = 256, s = 128, V = 1000, B = 3;
  ZooOptions o;
  o.layers = l;
  o.d_model = h;
  o.heads = 8;
  o.seq = s;
  o.vocab = V;
  Model m = build_zoo_model("gpt", o);
  const double bh = double(h), bs = double(s);
  double blocks_and_head = 0;
  for (const LayerSpec& layer : m.layers()) {
    LayerCost c = layer_cost(layer, B);
    if (layer.kind == LayerKind::transformer_block) {
      CHECK(c.forward_flops == 24.0 * B * bs * bh * bh + 4.0 * B * bs * bs * bh);
      CHECK(c.backward_input_flops + c.backward_weight_flops == 2 * c.forward_flops);
      blocks_and_head += 2 * c.forward_flops + c.backward_input_flops + c.backward_weight_flops;  // recompute
    } else if (layer.kind == LayerKind::lm_head) {
      CHECK(c.forward_flops == 2.0 * B * bs * bh * V);
      CHECK(c.backward_input_flops == c.forward_flops);
      CHECK(c.backward_weight_flops == c.forward_flops);
      blocks_and_head += c.forward_flops + c.backward_input_flops + c.backward_weight_flops;
    }
  }
  const double megatron = 96.0 * B * bs * l * bh * bh * (1 + bs / (6 * bh) + V / (16.0 * l * bh));
  CHECK(blocks_and_head == doctest::Approx(megatron).epsilon(1e-12));
}

TEST_CASE("analytic profile: metadata, data loading, optimizer bytes, determinism") {
  Model m = default_model();
  Profile p = analytic_profile(m, find_device("cpu-core-avx2"), 4);
  CHECK(p.source == "analytic");
  CHECK(p.model == m.name());
  CHECK(p.device.name == "cpu-core-avx2");
  CHECK(p.micro_batch == 4);
  CHECK(p.edges == m.edges());
  REQUIRE(p.layers.size() == m.size());
  CHECK(p.layers[0].is_data_loading);
  CHECK(p.layers[0].forward_ns == 0);
  CHECK(p.layers[0].output_bytes == 4 * 64 * 4);  // int32 token ids
  for (size_t i = 1; i < p.layers.size(); ++i) {
    CHECK_FALSE(p.layers[i].is_data_loading);
    CHECK(p.layers[i].forward_ns > 0);
  }
  const int64_t block_params = 4 * 128 * 128 + 2 * 128 * 512 + 512 + 9 * 128;
  const LayerProfile& b0 = p.layers[2];
  CHECK(b0.kind == "transformer_block");
  CHECK(b0.parameter_bytes == 4 * block_params);
  CHECK(b0.optimizer_bytes == 8 * block_params);  // adam: 16 - 2 * 4
  CHECK(b0.stash_bytes == 4 * (4 * (8 * 64 * 128 + 2 * 64 * 512 + 4 * 64 * 64) + 4 * 4 * 64));
  CHECK(p.total_parameter_bytes() == 4 * model_parameter_count(m));

  Profile mixed = analytic_profile(m, find_device("cpu-core-avx2"), 4, {0.5, true, "adam-mixed"});
  CHECK(mixed.layers[2].parameter_bytes == 2 * block_params);
  CHECK(mixed.layers[2].optimizer_bytes == 14 * block_params);  // 2 * 2 + 14 = 18 bytes per parameter
  CHECK(mixed.layers[2].stash_bytes ==
        2 * 4 * (8 * 64 * 128 + 2 * 64 * 512 + 4 * 64 * 64) + 4 * 4 * 4 * 64);  // fp32 stats

  CHECK(Json(analytic_profile(m, find_device("cpu-core-avx2"), 4)).dump() == Json(p).dump());
  Profile back = profile_from_json(Json(p));
  CHECK(Json(back) == Json(p));
}

TEST_CASE("every zoo model has an analytic profile on every catalog device") {
  ZooOptions o;
  o.layers = 2;
  o.d_model = 64;
  o.heads = 4;
  o.seq = 32;
  o.vocab = 100;
  for (auto family : zoo_families()) {
    Model m = build_zoo_model(family, o);
    for (const DeviceSpec& d : device_catalog()) {
      CAPTURE(family);
      CAPTURE(d.name);
      Profile p = analytic_profile(m, d, 2);
      validate_profile(p, "analytic");
      CHECK(p.total_forward_ns() > 0);
      CHECK(p.total_backward_ns() > p.total_forward_ns());
    }
  }
}

TEST_CASE("bad cost inputs are rejected") {
  Model m = default_model();
  const DeviceSpec& d = find_device("a100-80g");
  CHECK_THROWS_WITH_AS(analytic_profile(m, d, 0), "micro-batch: expected an integer >= 1, got 0", InputError);
  CHECK_THROWS_WITH_AS(analytic_profile(m, d, 1, {-0.1, false, "adam"}), doctest::Contains("efficiency"), InputError);
  CHECK_THROWS_WITH_AS(analytic_profile(m, d, 1, {1.5, false, "adam"}), doctest::Contains("efficiency"), InputError);
  CHECK_THROWS_WITH_AS(analytic_profile(m, d, 1, {0.5, false, "adagrad"}), doctest::Contains("unknown optimizer"),
                       InputError);
  LayerSpec op = spec("blob", LayerKind::opaque, {4}, {});
  CHECK_THROWS_WITH_AS(layer_cost(op, 1), doctest::Contains("layer \"blob\" (opaque): has no analytic cost"),
                       InputError);
  LayerSpec missing = spec("fc", LayerKind::linear, {4}, {{"out", 4}});
  CHECK_THROWS_WITH_AS(layer_cost(missing, 1), "layer \"fc\" (linear): missing attribute \"in\"", InputError);
  LayerSpec heads =
      spec("b", LayerKind::transformer_block, {8, 10}, {{"seq", 8}, {"d_model", 10}, {"heads", 3}, {"ffn", 40}});
  CHECK_THROWS_WITH_AS(layer_cost(heads, 1), doctest::Contains("not divisible by heads 3"), InputError);
  LayerSpec zero = spec("fc", LayerKind::linear, {4}, {{"in", 0}, {"out", 4}});
  CHECK_THROWS_WITH_AS(layer_cost(zero, 1), doctest::Contains("attribute \"in\" must be >= 1"), InputError);
}

// A model whose layers the device would take past a profile's limits for (1e6 s one pass,
// 1e18 bytes) is refused naming the layer, not written as a profile `plan` refuses.
TEST_CASE("analytic profile: a pass past 1e6 s or a size past 1e18 bytes is refused, naming the layer") {
  const DeviceSpec& d = find_device("a100-80g");
  ZooOptions z;
  z.layers = 1;
  z.d_model = 131072;
  z.heads = 1;
  z.ffn = 524288;
  z.seq = 1048576;
  z.vocab = 64;
  CHECK_THROWS_WITH_AS(analytic_profile(build_zoo_model("gpt", z), d, 400), doctest::Contains("one pass takes"),
                       InputError);
  const Model big = chain({spec("x", LayerKind::input, {400000000}, {}),
                           spec("fc", LayerKind::linear, {1000000000}, {{"in", 400000000}, {"out", 1000000000}})});
  CHECK_THROWS_WITH_AS(
      analytic_profile(big, d, 1),
      doctest::Contains("layer \"fc\" (linear): 1.600000004e+18 bytes, more than the 1e+18 a profile may hold"),
      InputError);
}

TEST_CASE("a layer that shares another's parameters counts none, and the profile keeps module paths") {
  std::vector<LayerSpec> layers = {spec("x", LayerKind::input, {33}, {}),
                                   spec("fc", LayerKind::linear, {33}, {{"in", 33}, {"out", 33}}),
                                   spec("fc_1", LayerKind::linear, {33}, {{"in", 33}, {"out", 33}}),
                                   spec("out", LayerKind::linear, {2}, {{"in", 33}, {"out", 2}})};
  layers[2].shares = "fc";
  layers[3].module = "head";
  const Model m = chain(layers);
  CHECK(layer_parameter_count(m.layers()[2]) == 0);
  CHECK(model_parameter_count(m) == 33 * 33 + 33 + 33 * 2 + 2);  // 1190: the shared layer once
  CHECK(layer_cost(m.layers()[2], 1).parameter_bytes == 0);
  CHECK(layer_cost(m.layers()[2], 1).forward_flops == layer_cost(m.layers()[1], 1).forward_flops);
  const Profile p = analytic_profile(m, test_device(), 2);
  CHECK(p.layers[2].parameter_bytes == 0);
  CHECK(p.layers[2].backward_weight_ns == p.layers[1].backward_weight_ns);  // its gradient is still computed
  CHECK(p.total_parameter_bytes() == 4 * 1190);
  CHECK(p.layers[3].module == "head");
  CHECK(p.layers[1].module.empty());
  CHECK(profile_from_json(Json(p)).layers[3].module == "head");
  CHECK_FALSE(Json(p)["layers"][1].contains("module"));
}
