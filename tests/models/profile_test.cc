#include "models/profile.h"

#include <doctest/doctest.h>

#include "models/error.h"

using namespace pw::models;
using pw::InputError;
using pw::Json;

static Profile sample_profile() {
  Profile p;
  p.model = "m";
  p.source = "analytic";
  p.device = {"a100-80g", 0, 0};
  p.micro_batch = 4;
  for (int i = 0; i < 3; ++i) {
    LayerProfile l;
    l.name = "l" + std::to_string(i);
    l.kind = "linear";
    l.forward_ns = 100 * (i + 1);
    l.backward_input_ns = 150;
    l.backward_weight_ns = 50;
    l.output_bytes = 1024;
    l.stash_bytes = 2048;
    l.parameter_bytes = 4096;
    l.optimizer_bytes = 8192;
    p.layers.push_back(l);
  }
  p.layers[0].is_data_loading = true;
  p.edges = {{0, 1}, {1, 2}, {0, 2}};
  return p;
}

TEST_CASE("profile JSON round trip and totals") {
  Profile p = sample_profile();
  Json j = p;
  Profile q = profile_from_json(j);
  CHECK(Json(q) == j);
  CHECK(q.edges == p.edges);
  CHECK(q.total_forward_ns() == 500);  // the data-loading source is not compute
  CHECK(q.total_backward_ns() == 400);
  CHECK(q.layers[0].compute_ns() == 0);
}

TEST_CASE("bad profiles: negative, NaN, unknown edge endpoint, missing field, wrong source") {
  Json j = sample_profile();
  Json bad = j;
  bad["layers"][1]["forward_ns"] = -5;
  CHECK_THROWS_WITH_AS(profile_from_json(bad), doctest::Contains("/layers/1/forward_ns: expected an integer >= 0"),
                       InputError);
  bad = j;
  bad["layers"][2]["output_bytes"] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(profile_from_json(bad), InputError);
  bad = j;
  bad["edges"][0][1] = "nowhere";
  CHECK_THROWS_WITH_AS(profile_from_json(bad), doctest::Contains("/edges/0: edge to unknown layer \"nowhere\""),
                       InputError);
  bad = j;
  bad["layers"][0].erase("stash_bytes");
  CHECK_THROWS_WITH_AS(profile_from_json(bad), "/layers/0/stash_bytes: missing required field", InputError);
  bad = j;
  bad["source"] = "guessed";
  CHECK_THROWS_AS(profile_from_json(bad), InputError);
  bad = j;
  bad["edges"] = Json::array({Json::array({"l2", "l1"})});
  CHECK_THROWS_WITH_AS(profile_from_json(bad), doctest::Contains("does not follow the layer order"), InputError);
  bad = j;
  bad["layers"] = Json::array();
  CHECK_THROWS_AS(profile_from_json(bad), InputError);
}
