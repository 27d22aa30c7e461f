// The costs and cluster a plan is simulated with, one rule for `simulate --plan`,
// `schedule export --plan` and `schedule import --plan`: the plan's own inputs
// (planner::Plan::inputs) unless --profile / --cluster replace them. A replacement that is not
// what the plan was made from, or a plan with no profile at all, gets a note on stderr.
#pragma once

#include <optional>
#include <string>

#include "models/cluster.h"
#include "planner/plan.h"
#include "sim/engine.h"

namespace pw::tools {

struct PlanCosts {
  sim::StageCosts costs;
  std::optional<models::Cluster> cluster;  // none: transfers are free
  const models::Cluster* cluster_ptr() const { return cluster ? &*cluster : nullptr; }
};

// `profile_file` / `cluster_file`: "" = the plan's own. Errors name the plan file.
PlanCosts plan_costs(const planner::Plan& plan, const std::string& plan_file, const std::string& profile_file,
                     const std::string& cluster_file);

}  // namespace pw::tools
