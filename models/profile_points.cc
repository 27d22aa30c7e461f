#include "models/profile_points.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "models/error.h"
#include "models/limits.h"

namespace pw::models {

namespace {

int base_threads(const Profile& p) { return p.device.threads > 0 ? p.device.threads : 1; }

ProfilePoint base_point(const Profile& p) {
  ProfilePoint pt;
  pt.micro_batch = p.micro_batch;
  pt.threads = base_threads(p);
  pt.co_run_workers = p.measurement ? p.measurement->co_run_workers : 1;
  for (const auto& l : p.layers)
    pt.layers.push_back({l.forward_ns, l.backward_input_ns, l.backward_weight_ns, l.step_ns});
  return pt;
}

int64_t lerp(int64_t a, int64_t b, double t) {
  return static_cast<int64_t>(
      std::llround(static_cast<double>(a) + (static_cast<double>(b) - static_cast<double>(a)) * t));
}

int64_t scale(int64_t v, double s) { return static_cast<int64_t>(std::llround(static_cast<double>(v) * s)); }

}  // namespace

std::vector<int> measured_thread_counts(const Profile& p) {
  std::vector<int> out{base_threads(p)};
  for (const auto& pt : p.points) out.push_back(pt.threads);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ProfileAt profile_at(const Profile& p, int64_t b, int threads) {
  if (b < 1) throw InputError("profile_at: micro-batch size must be >= 1, got " + std::to_string(b));
  if (threads <= 0) threads = base_threads(p);
  ProfileAt out;
  out.profile = p;
  Profile& q = out.profile;
  q.points.clear();
  q.micro_batch = b;
  q.device.threads = threads;
  const double bs = static_cast<double>(b) / static_cast<double>(p.micro_batch);
  for (auto& l : q.layers) {
    l.output_bytes = scale(l.output_bytes, bs);
    l.stash_bytes = scale(l.stash_bytes, bs);
    l.workspace_bytes = scale(l.workspace_bytes, bs);
    l.weight_pending_bytes = scale(l.weight_pending_bytes, bs);
  }
  // Candidate points at the nearest measured thread count.
  std::vector<ProfilePoint> all{base_point(p)};
  for (const auto& pt : p.points) {
    if (pt.layers.size() != p.layers.size())
      throw InputError("profile: a point at micro-batch " + std::to_string(pt.micro_batch) + " has " +
                       std::to_string(pt.layers.size()) + " layers, the profile " + std::to_string(p.layers.size()));
    all.push_back(pt);
  }
  int k = all[0].threads;
  for (const auto& pt : all)
    if (std::abs(pt.threads - threads) < std::abs(k - threads)) k = pt.threads;
  if (k != threads && (p.source == "measured" || !p.points.empty())) {
    out.extrapolated = true;
    out.note = "no measurement at " + std::to_string(threads) + " threads (nearest: " + std::to_string(k) + ")";
  }
  std::map<int64_t, const ProfilePoint*> by_size;  // the first point of each size wins
  for (const auto& pt : all)
    if (pt.threads == k) by_size.emplace(pt.micro_batch, &pt);
  auto apply = [&](auto&& f) {
    for (size_t i = 0; i < q.layers.size(); ++i) {
      PointTimes t = f(i);
      q.layers[i].forward_ns = t.forward_ns;
      q.layers[i].backward_input_ns = t.backward_input_ns;
      q.layers[i].backward_weight_ns = t.backward_weight_ns;
      q.layers[i].step_ns = t.step_ns;
    }
  };
  auto above = by_size.lower_bound(b);
  if (above != by_size.end() && above->first == b) {
    apply([&](size_t i) { return above->second->layers[i]; });
  } else if (above != by_size.end() && above != by_size.begin()) {
    auto below = std::prev(above);
    const double t = static_cast<double>(b - below->first) / static_cast<double>(above->first - below->first);
    apply([&](size_t i) {
      const PointTimes &x = below->second->layers[i], &y = above->second->layers[i];
      return PointTimes{lerp(x.forward_ns, y.forward_ns, t), lerp(x.backward_input_ns, y.backward_input_ns, t),
                        lerp(x.backward_weight_ns, y.backward_weight_ns, t), lerp(x.step_ns, y.step_ns, t)};
    });
  } else {
    const auto near = above == by_size.end() ? std::prev(by_size.end()) : above;
    const double s = static_cast<double>(b) / static_cast<double>(near->first);
    apply([&](size_t i) {
      const PointTimes& x = near->second->layers[i];
      return PointTimes{scale(x.forward_ns, s), scale(x.backward_input_ns, s), scale(x.backward_weight_ns, s),
                        x.step_ns};
    });
    if (p.source == "measured" || !p.points.empty()) {
      out.extrapolated = true;
      if (!out.note.empty()) out.note += "; ";
      out.note += "micro-batch " + std::to_string(b) + " outside the measured sizes (scaled from " +
                  std::to_string(near->first) + ")";
    }
  }
  return out;
}

void measurement_to_json(Json& j, const Profile& p) {
  if (p.measurement)
    j["measurement"] = {{"context", p.measurement->context},
                        {"co_run_workers", p.measurement->co_run_workers},
                        {"reps", p.measurement->reps}};
  if (p.points.empty()) return;
  Json pts = Json::array();
  for (const auto& pt : p.points) {
    Json layers = Json::array();
    for (const auto& t : pt.layers)
      layers.push_back({t.forward_ns, t.backward_input_ns, t.backward_weight_ns, t.step_ns});
    pts.push_back({{"micro_batch", pt.micro_batch},
                   {"threads", pt.threads},
                   {"co_run_workers", pt.co_run_workers},
                   {"layers", layers}});
  }
  j["points"] = pts;
}

void measurement_from_json(const Json& j, Profile& p) {
  if (j.contains("measurement")) {
    const Json& m = require_field(j, "measurement", "");
    require_object(m, "/measurement");
    ProfileMeasurement pm;
    pm.context = get_string(m, "context", "/measurement");
    if (pm.context != "in-context" && pm.context != "isolated")
      throw InputError("/measurement/context: expected \"in-context\" or \"isolated\", got \"" + pm.context + "\"");
    pm.co_run_workers = get_limited_int_or(m, "co_run_workers", "/measurement", 1, limits::kStages);
    pm.reps = get_limited_int_or(m, "reps", "/measurement", 0, {0, 1000000});
    p.measurement = pm;
  }
  if (!j.contains("points")) return;
  const Json& arr = require_array(j, "points", "");
  for (size_t k = 0; k < arr.size(); ++k) {
    const std::string at = join_path("/points", k);
    require_object(arr[k], at);
    ProfilePoint pt;
    pt.micro_batch = get_limited(arr[k], "micro_batch", at, limits::kMicroBatchSize);
    pt.threads = get_limited_int(arr[k], "threads", at, {1, limits::kThreads.max});
    pt.co_run_workers = get_limited_int_or(arr[k], "co_run_workers", at, 1, limits::kStages);
    const Json& layers = require_array(arr[k], "layers", at);
    if (layers.size() != p.layers.size())
      throw InputError(at + "/layers: expected " + std::to_string(p.layers.size()) + " entries (one per layer), got " +
                       std::to_string(layers.size()));
    for (size_t i = 0; i < layers.size(); ++i) {
      const Json& e = layers[i];
      const std::string li = join_path(at + "/layers", i);
      if (!e.is_array() || e.size() != 4)
        throw InputError(li + ": expected [forward_ns, backward_input_ns, backward_weight_ns, step_ns]");
      int64_t v[4];
      for (int f = 0; f < 4; ++f)
        v[f] = limited_value(e[f], join_path(li, static_cast<size_t>(f)), limits::kDurationNs);
      pt.layers.push_back({v[0], v[1], v[2], v[3]});
    }
    p.points.push_back(std::move(pt));
  }
}

}  // namespace pw::models
