// profile_at: the measured point, interpolation between measured sizes only, and the
// extrapolation flag (models/profile_points.h). Hand-made points, exact values.
#include "models/profile_points.h"

#include <doctest/doctest.h>

using namespace pw::models;

namespace {

// One linear layer measured at micro-batch 2 (base, 1 thread) and 4, 8 (points); 2 threads at 4.
Profile measured() {
  Profile p;
  p.model = "m";
  p.source = "measured";
  p.device = {"cpu", 2, 1};
  p.micro_batch = 2;
  LayerProfile in;
  in.name = "in";
  in.kind = "input";
  in.is_data_loading = true;
  in.output_bytes = 80;
  LayerProfile l;
  l.name = "fc";
  l.kind = "linear";
  l.forward_ns = 100;
  l.backward_input_ns = 200;
  l.backward_weight_ns = 300;
  l.step_ns = 50;
  l.output_bytes = 40;
  l.stash_bytes = 80;
  l.parameter_bytes = 1000;
  l.optimizer_bytes = 2000;
  p.layers = {in, l};
  p.edges = {{0, 1}};
  p.points.push_back({4, 1, 2, {{0, 0, 0, 0}, {150, 260, 500, 50}}});
  p.points.push_back({8, 1, 2, {{0, 0, 0, 0}, {350, 660, 900, 52}}});
  p.points.push_back({4, 2, 1, {{0, 0, 0, 0}, {90, 140, 260, 30}}});
  return p;
}

}  // namespace

TEST_CASE("profile_at: a measured point is used as measured") {
  const ProfileAt a = profile_at(measured(), 4, 1);
  CHECK_FALSE(a.extrapolated);
  CHECK(a.note.empty());
  CHECK(a.profile.micro_batch == 4);
  CHECK(a.profile.points.empty());
  const LayerProfile& l = a.profile.layers[1];
  CHECK(l.forward_ns == 150);
  CHECK(l.backward_input_ns == 260);
  CHECK(l.backward_weight_ns == 500);
  CHECK(l.step_ns == 50);
  CHECK(l.stash_bytes == 160);       // bytes scale linearly from the base (2 -> 4)
  CHECK(l.parameter_bytes == 1000);  // parameters do not
  const ProfileAt base = profile_at(measured(), 2, 1);
  CHECK(base.profile.layers[1].forward_ns == 100);
  CHECK(base.profile.layers[1].stash_bytes == 80);
  CHECK_FALSE(base.extrapolated);
}

TEST_CASE("profile_at: interpolation between the nearest measured sizes is exact") {
  // b = 6 lies halfway between 4 and 8; b = 3 a half between 2 and 4.
  const ProfileAt six = profile_at(measured(), 6, 1);
  CHECK_FALSE(six.extrapolated);
  CHECK(six.profile.layers[1].forward_ns == 250);
  CHECK(six.profile.layers[1].backward_input_ns == 460);
  CHECK(six.profile.layers[1].backward_weight_ns == 700);
  CHECK(six.profile.layers[1].step_ns == 51);
  const ProfileAt three = profile_at(measured(), 3, 1);
  CHECK_FALSE(three.extrapolated);
  CHECK(three.profile.layers[1].forward_ns == 125);
  CHECK(three.profile.layers[1].backward_weight_ns == 400);
  CHECK(three.profile.layers[1].stash_bytes == 120);
}

TEST_CASE("profile_at: outside the measured sizes it scales from the nearest and says so") {
  const ProfileAt big = profile_at(measured(), 16, 1);
  CHECK(big.extrapolated);
  CHECK(big.note.find("micro-batch 16 outside the measured sizes") != std::string::npos);
  CHECK(big.profile.layers[1].forward_ns == 700);  // 350 x 16/8
  CHECK(big.profile.layers[1].step_ns == 52);      // per iteration: not scaled
  const ProfileAt one = profile_at(measured(), 1, 1);
  CHECK(one.extrapolated);
  CHECK(one.profile.layers[1].forward_ns == 50);  // 100 x 1/2
}

TEST_CASE("profile_at: thread counts pick their own points, an unmeasured count extrapolates") {
  const ProfileAt two = profile_at(measured(), 4, 2);
  CHECK_FALSE(two.extrapolated);
  CHECK(two.profile.device.threads == 2);
  CHECK(two.profile.layers[1].forward_ns == 90);
  const ProfileAt two8 = profile_at(measured(), 8, 2);  // only 4 measured at 2 threads
  CHECK(two8.extrapolated);
  CHECK(two8.profile.layers[1].forward_ns == 180);
  const ProfileAt four = profile_at(measured(), 4, 4);
  CHECK(four.extrapolated);
  CHECK(four.note.find("no measurement at 4 threads (nearest: 2)") != std::string::npos);
  CHECK(measured_thread_counts(measured()) == std::vector<int>{1, 2});
}

TEST_CASE("profile_at: an analytic profile without points scales linearly and never flags") {
  Profile p = measured();
  p.source = "analytic";
  p.points.clear();
  const ProfileAt a = profile_at(p, 8, 1);
  CHECK_FALSE(a.extrapolated);
  CHECK(a.profile.layers[1].forward_ns == 400);
  p.source = "measured";
  CHECK(profile_at(p, 8, 1).extrapolated);
}
