// Simulating a plan for the what-if studies: the plan's stages, costs from the profile
// (sim/plan_costs.h), a schedule of the plan's kind (planner/schedule_gen.h) and the network
// of the cluster the plan was made for (sim/network.h).
#pragma once

#include "models/cluster.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "sim/report.h"

namespace pw::whatif {

// Simulates `iterations` back-to-back iterations (the report's iteration_ns is then the
// steady-state period). Pure; safe to call concurrently.
sim::Report simulate_plan(const planner::Plan& plan, const models::Profile& profile, const models::Cluster& cluster,
                     int iterations = 2);

}  // namespace pw::whatif
