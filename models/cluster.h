// Cluster: `num_devices()` identical devices in a hierarchy of levels, innermost first
// (e.g. 8 GPUs per node joined by NVLink, 16 nodes joined by InfiniBand). Device d's group at
// level k is d / (count_0 * ... * count_k); two devices communicate over the innermost level
// whose group contains both. Devices are numbered 0..num_devices()-1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/device.h"
#include "models/json_util.h"

namespace pw::models {

struct Level {
  std::string name;                  // e.g. "node", "cluster"
  int count = 1;                     // groups of the level below (devices for level 0) per group
  double bandwidth_bytes_per_s = 0;  // per direction, of the link joining them
  int64_t latency_ns = 0;
};

// Nanoseconds to move `bytes` over a link of level l at its bandwidth (its latency not included),
// rounded to whole ns; InputError naming the level past limits::kDurationNs (1e6 s: a link that
// slow for that much data), where the rounding to int64 would be unspecified.
int64_t link_bytes_ns(const Level& l, double bytes);

class Cluster {
 public:
  Cluster() = default;
  // Validates: at least one level, counts >= 1, bandwidth > 0, latency >= 0.
  Cluster(std::string name, DeviceSpec device, std::vector<Level> levels);

  const std::string& name() const { return name_; }
  const DeviceSpec& device() const { return device_; }
  const std::vector<Level>& levels() const { return levels_; }
  int num_devices() const { return num_devices_; }
  // Devices in one group of level k (product of counts 0..k).
  int group_size(int level) const;
  // Innermost level joining devices a and b (a != b); -1 when a == b.
  int level_between(int a, int b) const;
  // latency + bytes / bandwidth over the joining level, in ns (0 when a == b).
  int64_t transfer_ns(int a, int b, int64_t bytes) const;

 private:
  std::string name_;
  DeviceSpec device_;
  std::vector<Level> levels_;
  int num_devices_ = 0;
};

// n devices on one level.
Cluster make_flat_cluster(const DeviceSpec& device, int n, double bandwidth_bytes_per_s, int64_t latency_ns = 0);

// {"format": "pipewright.cluster/1", "name", "device": NAME | {...}, "levels": [{name, count,
// bandwidth_bytes_per_s, latency_ns}]} (innermost first).
void to_json(Json& j, const Cluster& c);
Cluster cluster_from_json(const Json& j);
Cluster load_cluster_file(const std::string& file);
void save_cluster_file(const std::string& file, const Cluster& c);

}  // namespace pw::models
