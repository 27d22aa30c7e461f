#include "sim/network.h"

#include "models/error.h"
#include "planner/replicated_sync.h"

namespace pw::sim {

Network Network::fixed(int64_t per_hop_ns) {
  if (per_hop_ns < 0) throw InputError("transfer time must be >= 0, got " + std::to_string(per_hop_ns) + " ns");
  Network n;
  n.per_hop_ns_ = per_hop_ns;
  return n;
}

Network Network::from_cluster(const models::Cluster& cluster, std::vector<int> device_of) {
  for (size_t d = 0; d < device_of.size(); ++d)
    if (device_of[d] < 0 || device_of[d] >= cluster.num_devices())
      throw InputError("cluster \"" + cluster.name() + "\": device " + std::to_string(device_of[d]) +
                       " of pipeline device " + std::to_string(d) + " out of range (the cluster has " +
                       std::to_string(cluster.num_devices()) + " devices)");
  Network n;
  n.has_cluster_ = true;
  n.cluster_ = cluster;
  n.device_of_ = std::move(device_of);
  return n;
}

TransferCost Network::cost(int a, int b, int64_t bytes) const {
  if (a == b) return {};
  if (!has_cluster_) return {0, per_hop_ns_};
  PW_CHECK(a >= 0 && b >= 0 && a < static_cast<int>(device_of_.size()) && b < static_cast<int>(device_of_.size()),
           "network: device out of range");
  const int ca = device_of_[a], cb = device_of_[b];
  const int level = cluster_.level_between(ca, cb);
  if (level < 0) return {};
  const int64_t latency = cluster_.levels()[level].latency_ns;
  return {cluster_.transfer_ns(ca, cb, bytes) - latency, latency};
}

TransferCost Network::allreduce_cost(const std::vector<int>& devices, int64_t bytes) const {
  const int r = static_cast<int>(devices.size());
  if (r < 2) return {};
  if (!has_cluster_) return {0, 2 * (r - 1) * per_hop_ns_};
  std::vector<int> on;
  for (int d : devices) {
    PW_CHECK(d >= 0 && d < static_cast<int>(device_of_.size()), "network: device out of range");
    on.push_back(device_of_[d]);
  }
  const planner::RingCost c = planner::ring_allreduce(cluster_, on, bytes);
  return {c.occupancy_ns, c.latency_ns};
}

}  // namespace pw::sim
