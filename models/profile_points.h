// Measured profiles at several (micro-batch size, threads) points, and the profile the planner
// and simulator use at one point (DESIGN.md, "Fidelity").
//
// A profile's `layers` hold the times at (micro_batch, device.threads); `points` may hold more
// points. profile_at(p, b, k) returns a copy of p whose layer times hold for b samples on k
// threads (micro_batch = b, device.threads = k, points dropped):
// - times (F, B, W per micro-batch; step_ns per iteration) come from the points at k threads
//   (the base layers count as a point): the point itself when b was measured, linear
//   interpolation between the nearest measured sizes below and above b, otherwise (b outside
//   the measured sizes) linear scaling in b from the nearest measured size and `extrapolated`
//   set; step_ns never scales with b. When no point has k threads, the nearest thread count is
//   used and `extrapolated` is set.
// - without points: the base times scaled linearly in b (the analytic model's contract);
//   `extrapolated` is set for a measured profile when b or k differs from the base.
// - bytes (output, stash, workspace, weight-pending) scale linearly in b from the base, rounded
//   to the nearest byte; parameters and optimizer state do not. b == micro_batch leaves them
//   unchanged (peak memory stays exact).
// Values are rounded to the nearest ns. Pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "models/json_util.h"
#include "models/profile.h"

namespace pw::models {

struct ProfileAt {
  Profile profile;
  bool extrapolated = false;
  std::string note;  // why it extrapolated ("" when it did not)
};

// threads <= 0: the profile's own thread count (device.threads, or 1 when unknown).
ProfileAt profile_at(const Profile& p, int64_t micro_batch, int threads);

// Thread counts with measured points (the base's included), ascending.
std::vector<int> measured_thread_counts(const Profile& p);

// JSON of the optional fields ("measurement", "points"), read and written by profile.cc.
void measurement_to_json(Json& j, const Profile& p);
void measurement_from_json(const Json& j, Profile& p);

}  // namespace pw::models
