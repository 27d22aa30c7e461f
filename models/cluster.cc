#include "models/cluster.h"

#include <cmath>
#include <limits>

#include "models/error.h"
#include "models/limits.h"

namespace pw::models {

Cluster::Cluster(std::string name, DeviceSpec device, std::vector<Level> levels)
    : name_(std::move(name)), device_(std::move(device)), levels_(std::move(levels)) {
  if (levels_.empty()) throw InputError("cluster \"" + name_ + "\": needs at least one level");
  int64_t n = 1;
  for (size_t k = 0; k < levels_.size(); ++k) {
    const Level& l = levels_[k];
    const std::string at = "cluster \"" + name_ + "\" level " + std::to_string(k);
    if (l.count < 1) throw InputError(at + ": count must be >= 1, got " + std::to_string(l.count));
    // Positive and finite here (what-if's transfer-free cluster uses 1e30); a cluster file is
    // held to the --bandwidth flag's range (cluster_from_json).
    if (!(l.bandwidth_bytes_per_s > 0) || !std::isfinite(l.bandwidth_bytes_per_s))
      throw InputError(at + ": bandwidth_bytes_per_s must be a positive number");
    if (l.latency_ns < 0) throw InputError(at + ": latency_ns must be >= 0");
    n *= l.count;
    if (n > limits::kDevices.max)
      throw InputError(at + ": more than " + std::to_string(limits::kDevices.max) + " devices in all");
  }
  num_devices_ = static_cast<int>(n);
}

int Cluster::group_size(int level) const {
  PW_CHECK(level >= 0 && level < static_cast<int>(levels_.size()), "level out of range");
  int g = 1;
  for (int k = 0; k <= level; ++k) g *= levels_[k].count;
  return g;
}

int Cluster::level_between(int a, int b) const {
  PW_CHECK(a >= 0 && a < num_devices_ && b >= 0 && b < num_devices_, "device out of range");
  if (a == b) return -1;
  int g = 1;
  for (size_t k = 0; k < levels_.size(); ++k) {
    g *= levels_[k].count;
    if (a / g == b / g) return static_cast<int>(k);
  }
  PW_CHECK(false, "devices not joined by any level");
}

int64_t Cluster::transfer_ns(int a, int b, int64_t bytes) const {
  int k = level_between(a, b);
  if (k < 0) return 0;
  const Level& l = levels_[k];
  return l.latency_ns + link_bytes_ns(l, static_cast<double>(bytes));
}

int64_t link_bytes_ns(const Level& l, double bytes) {
  const double ns = bytes * 1e9 / l.bandwidth_bytes_per_s;
  if (!(ns <= static_cast<double>(limits::kDurationNs.max)))
    throw InputError("cluster level \"" + l.name + "\": moving " + format_real(bytes) + " bytes at " +
                     format_real(l.bandwidth_bytes_per_s) + " bytes/s takes " + format_real(ns / 1e9) +
                     " s, more than the " + format_real(static_cast<double>(limits::kDurationNs.max) / 1e9) +
                     " s one transfer may take");
  return std::llround(ns);
}

Cluster make_flat_cluster(const DeviceSpec& device, int n, double bandwidth_bytes_per_s, int64_t latency_ns) {
  if (n < 1) throw InputError("--devices: expected at least 1 device, got " + std::to_string(n));
  return Cluster("flat-" + std::to_string(n) + "x" + device.name, device,
                 {Level{"flat", n, bandwidth_bytes_per_s, latency_ns}});
}

void to_json(Json& j, const Cluster& c) {
  Json levels = Json::array();
  for (const Level& l : c.levels())
    levels.push_back({{"name", l.name},
                      {"count", l.count},
                      {"bandwidth_bytes_per_s", l.bandwidth_bytes_per_s},
                      {"latency_ns", l.latency_ns}});
  j = Json{{"format", format_tag("cluster", 1)}, {"name", c.name()}, {"device", c.device()}, {"levels", levels}};
}

Cluster cluster_from_json(const Json& j) {
  require_object(j, "");
  check_format(j, "cluster", 1, "");
  std::string name = get_string(j, "name", "");
  DeviceSpec device = device_from_json(require_field(j, "device", ""), "/device");
  const Json& arr = require_array(j, "levels", "");
  if (arr.empty()) throw InputError("/levels: expected at least one level");
  std::vector<Level> levels;
  for (size_t k = 0; k < arr.size(); ++k) {
    const std::string at = join_path("/levels", k);
    require_object(arr[k], at);
    Level l;
    l.name = get_string_or(arr[k], "name", at, "level" + std::to_string(k));
    l.count = get_limited_int(arr[k], "count", at, limits::kDevices);
    l.bandwidth_bytes_per_s = get_number(arr[k], "bandwidth_bytes_per_s", at, 1e-300);
    check_real_limit(l.bandwidth_bytes_per_s, limits::kBandwidth, at + "/bandwidth_bytes_per_s");
    l.latency_ns = get_limited_or(arr[k], "latency_ns", at, 0, limits::kDurationNs);
    levels.push_back(l);
  }
  return Cluster(name, device, levels);
}

Cluster load_cluster_file(const std::string& file) { return parse_json_file<Cluster>(file, cluster_from_json); }

void save_cluster_file(const std::string& file, const Cluster& c) {
  Json j = c;
  save_json_file(file, j);
}

}  // namespace pw::models
