#include "tools/plan_inputs.h"

#include "models/error.h"
#include "models/pipedream_import.h"
#include "models/profile.h"
#include "sim/plan_costs.h"
#include "tools/notes.h"

namespace pw::tools {

namespace {

// A document embedded in a plan, read by its own reader; errors name the plan and the path.
template <class T>
T parse_embedded(const Json& doc, const std::string& plan_file, const std::string& path, T (*read)(const Json&)) {
  try {
    return read(doc);
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(plan_file + ": " + path + (what.rfind('/', 0) == 0 ? "" : ": ") + what);
  }
}

}  // namespace

PlanCosts plan_costs(const planner::Plan& plan, const std::string& plan_file, const std::string& profile_file,
                     const std::string& cluster_file) {
  PlanCosts out;
  if (!cluster_file.empty()) {
    out.cluster = models::load_cluster_file(cluster_file);
    if (!plan.cluster_hash.empty() && planner::content_hash(Json(*out.cluster)) != plan.cluster_hash)
      defer_note(cluster_file + " is not the cluster " + plan_file + " was made for (" + plan.cluster_name +
                 "); simulating on it");
  } else if (!plan.inputs.cluster.is_null()) {
    out.cluster = parse_embedded(plan.inputs.cluster, plan_file, "/inputs/cluster", models::cluster_from_json);
  }
  if (out.cluster) {
    try {
      planner::check_plan_on_cluster(
          plan, out.cluster->num_devices(),
          cluster_file.empty() ? "its cluster \"" + out.cluster->name() + "\"" : cluster_file);
    } catch (const InputError& e) { throw InputError(plan_file + ": " + e.what()); }
  }
  std::optional<models::Profile> profile;
  std::string profile_name = profile_file;
  if (!profile_file.empty()) {
    profile = models::load_any_profile_file(profile_file);
    if (!plan.profile_hash.empty() && planner::content_hash(Json(*profile)) != plan.profile_hash)
      defer_note(profile_file + " is not the profile " + plan_file + " was made from; simulating with it");
  } else if (!plan.inputs.profile.is_null()) {
    profile = parse_embedded(plan.inputs.profile, plan_file, "/inputs/profile", models::profile_from_json);
    profile_name = "its profile";
  }
  if (!profile) {
    defer_note(plan_file +
               " carries no profile and none was given (--profile): using its per-stage predictions; "
               "transfers and activation memory are unknown");
    out.costs = sim::stage_costs_from_predictions(plan);
    return out;
  }
  try {
    out.costs = sim::stage_costs_from_plan(plan, *profile, out.cluster_ptr());
  } catch (const InputError& e) { throw InputError(plan_file + " with " + profile_name + ": " + e.what()); }
  return out;
}

}  // namespace pw::tools
