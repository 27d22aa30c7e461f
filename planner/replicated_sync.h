// Replicated stages in the planner's cost model: the ring all-reduce among a stage's replicas,
// and the predicted iteration of a synchronous plan whose stages may be replicated.
//
// ring_allreduce(cluster, devices, bytes): r = devices.size() replicas all-reduce `bytes` of
// gradients in a ring over the innermost level whose group holds all of them (the outermost
// level_between over every pair): occupancy = 2(r-1)/r x bytes / bandwidth (each device sends
// and receives that much), latency = 2(r-1) x the level's latency (2(r-1) ring steps). Zero
// for r < 2 or devices that are all one device. Throws InputError for a device not in the
// cluster. sim/network.h uses this formula for its all-reduce events.
//
// predict_replicated_sync(plan, profile, cluster): for a gpipe or 1f1b plan whose stages may
// have several devices (replica i of stage s takes micro-batches j = i mod r_s), sets
// per stage predicted.allreduce_ns = ring_allreduce over its devices of its parameter bytes,
// and the plan's predicted iteration with the fill-drain model of planner/sync_dp.h extended
// to replicas: t_s = forward_ns + backward_ns (one replica, per micro-batch), cut c's
// transfer x_c (per micro-batch and direction, from the stages' comm_ns: comm_0 = x_0,
// comm_s = x_{s-1} + x_s), a replicated stage or cut serving micro-batches in turn:
//   iteration = sum_s t_s + sum_c 2 x_c + (m - 1) max(max_s t_s / r_s, max_c x_c / l_c)
//               + max_s allreduce_s + predicted_step_ns,
// l_c = lcm(r_c, r_{c+1}) (the distinct replica pairs that cut c's transfers use in turn).
// Also sets bottleneck, throughput and the figures (planner/plan_figures.h). Requires the
// stages' forward/backward/comm predictions (a plan from make_plan with objective "sync").
// Throws InputError for an asynchronous plan or a stage range outside the profile.
#pragma once

#include <cstdint>
#include <vector>

#include "models/cluster.h"
#include "models/profile.h"
#include "planner/plan.h"

namespace pw::planner {

struct RingCost {
  int64_t occupancy_ns = 0;
  int64_t latency_ns = 0;
  int64_t total() const { return occupancy_ns + latency_ns; }
};

RingCost ring_allreduce(const models::Cluster& cluster, const std::vector<int>& devices, int64_t bytes);

void predict_replicated_sync(Plan& plan, const models::Profile& profile, const models::Cluster& cluster);

}  // namespace pw::planner
