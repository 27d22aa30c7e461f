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
  CHECK_THROWS_WITH_AS(profile_from_json(bad),
                       doctest::Contains("/layers/1/forward_ns: expected an integer in [0, 1000000000000000], got -5"),
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

TEST_CASE("a measured profile in the old format (no measurement, points or step_ns) still reads") {
  // Written by the profiler before measurement modes and points existed.
  const Json old = Json::parse(R"({"format": "pipewright.profile/1", "model": "mlp", "source": "measured",
    "device": {"name": "Some CPU", "cores": 2, "threads": 2}, "micro_batch": 4,
    "layers": [
      {"name": "input", "kind": "input", "forward_ns": 900, "backward_input_ns": 0, "backward_weight_ns": 0,
       "output_bytes": 256, "stash_bytes": 0, "parameter_bytes": 0, "optimizer_bytes": 0, "workspace_bytes": 0,
       "is_data_loading": true},
      {"name": "fc0", "kind": "linear", "forward_ns": 5000, "backward_input_ns": 4000, "backward_weight_ns": 3000,
       "output_bytes": 256, "stash_bytes": 256, "parameter_bytes": 1088, "optimizer_bytes": 2176,
       "workspace_bytes": 0, "weight_pending_bytes": 256}],
    "edges": [["input", "fc0"]]})");
  const Profile p = profile_from_json(old);
  CHECK_FALSE(p.measurement.has_value());
  CHECK(p.points.empty());
  CHECK(p.layers[1].step_ns == 0);
  CHECK(p.layers[1].backward_weight_ns == 3000);
  CHECK(Json(p) == old);  // and it writes back unchanged
}

TEST_CASE("measurement, points and step_ns round-trip, bad points are rejected with their path") {
  Profile p = sample_profile();
  p.source = "measured";
  p.measurement = ProfileMeasurement{"in-context", 2, 7};
  p.layers[1].step_ns = 33;
  ProfilePoint pt;
  pt.micro_batch = 8;
  pt.threads = 2;
  pt.co_run_workers = 1;
  pt.layers = {{1, 0, 0, 0}, {2, 3, 4, 5}, {6, 7, 8, 9}};
  p.points.push_back(pt);
  const Json j = p;
  const Profile q = profile_from_json(j);
  REQUIRE(q.measurement.has_value());
  CHECK(q.measurement->context == "in-context");
  CHECK(q.measurement->co_run_workers == 2);
  CHECK(q.measurement->reps == 7);
  CHECK(q.layers[1].step_ns == 33);
  REQUIRE(q.points.size() == 1);
  CHECK(q.points[0].micro_batch == 8);
  CHECK(q.points[0].layers[1].backward_weight_ns == 4);
  CHECK(Json(q) == j);
  Json bad = j;
  bad["measurement"]["context"] = "guessed";
  CHECK_THROWS_WITH_AS(profile_from_json(bad), doctest::Contains("/measurement/context"), InputError);
  bad = j;
  bad["points"][0]["layers"].erase(0);
  CHECK_THROWS_WITH_AS(profile_from_json(bad), doctest::Contains("/points/0/layers: expected 3 entries"), InputError);
  bad = j;
  bad["points"][0]["layers"][1][2] = -1;
  CHECK_THROWS_WITH_AS(profile_from_json(bad), doctest::Contains("/points/0/layers/1/2"), InputError);
}

// Whatever makes a profile (the JSON and PipeDream readers, the analytic cost model, the
// profiler) checks it here: values past a profile file's limits, or whose sums over the layers
// pass them, would be written and then refused, or wrap a stage's int64 sums.
TEST_CASE("validate_profile: each time and size, and its sum over the layers, within the profile's limits") {
  Profile p = sample_profile();
  CHECK_NOTHROW(validate_profile(p, "p"));
  for (auto& l : p.layers) l.forward_ns = 0;  // the sum counts every layer, data loading included
  p.layers[1].forward_ns = 1000000000000000;  // limits::kDurationNs.max: the most one layer may take
  CHECK_NOTHROW(validate_profile(p, "p"));
  p.layers[2].forward_ns = 1;
  CHECK_THROWS_WITH_AS(validate_profile(p, "p"),
                       "p: layer 2 (\"l2\"): the layers' forward_ns up to this one sum to 1000000000000001, more "
                       "than 1000000000000000",
                       InputError);
  p = sample_profile();
  p.layers[1].output_bytes = 1000000000000000001;
  CHECK_THROWS_WITH_AS(validate_profile(p, "p"),
                       "p: layer 1 (\"l1\"): output_bytes 1000000000000000001 is more than 1000000000000000000",
                       InputError);
  p = sample_profile();
  for (auto& l : p.layers) l.optimizer_bytes = 900000000000000000;  // each fits, their sum does not
  CHECK_THROWS_WITH_AS(validate_profile(p, "p"), doctest::Contains("the layers' optimizer_bytes up to this one sum"),
                       InputError);
  p = sample_profile();
  p.micro_batch = (int64_t{1} << 30) + 1;
  CHECK_THROWS_WITH_AS(validate_profile(p, "p"), "p: micro_batch 1073741825 is more than 1073741824", InputError);
  // The JSON reader refuses the same profile through validate_profile.
  p = sample_profile();
  for (auto& l : p.layers) l.parameter_bytes = 600000000000000000;
  CHECK_THROWS_WITH_AS(profile_from_json(Json(p)), doctest::Contains("parameter_bytes up to this one sum"), InputError);
}
