// Network: what a transfer between two (logical) pipeline devices costs.
//
// A transfer of `bytes` from device a to device b occupies the directed link a->b for
// `occupancy_ns` (the bandwidth part) and arrives `latency_ns` after leaving it. Transfers on
// one directed link queue (FIFO by request time, ties in request order); the two directions
// of a pair are separate links (full duplex); compute and transfers overlap.
//
// Two models:
// - fixed(per_hop_ns): every transfer between distinct devices costs exactly per_hop_ns of
//   latency and occupies nothing (no queueing), whatever its size. The `--uniform` model.
// - from_cluster(cluster, device_of): logical device d is cluster device device_of[d];
//   a transfer costs latency + bytes / bandwidth of the innermost level joining the two
//   cluster devices (models::Cluster::transfer_ns); the bandwidth part occupies the link.
//   Two logical devices on one cluster device transfer for free.
// All-reduce among replicas (allreduce_cost): a ring over the given logical devices, of the
// innermost level whose group holds all of them (models::Cluster::level_between, outermost
// over the pairs; planner::ring_allreduce): occupancy 2(r-1)/r x bytes / bandwidth, latency
// 2(r-1) x the level's latency. fixed(h): latency 2(r-1) h. Free network or r < 2: zero.
// Immutable after construction; safe to share between threads.
#pragma once

#include <cstdint>
#include <vector>

#include "models/cluster.h"

namespace pw::sim {

struct TransferCost {
  int64_t occupancy_ns = 0;
  int64_t latency_ns = 0;
  int64_t total() const { return occupancy_ns + latency_ns; }
};

class Network {
 public:
  Network() = default;  // all transfers free
  static Network fixed(int64_t per_hop_ns);
  static Network from_cluster(const models::Cluster& cluster, std::vector<int> device_of);

  TransferCost cost(int a, int b, int64_t bytes) const;
  TransferCost allreduce_cost(const std::vector<int>& devices, int64_t bytes) const;

 private:
  int64_t per_hop_ns_ = 0;
  bool has_cluster_ = false;
  models::Cluster cluster_;
  std::vector<int> device_of_;
};

}  // namespace pw::sim
