#include "tools/plan_trials.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "exec/optimizer.h"
#include "exec/profile/in_context.h"
#include "exec/runtime/run_pipeline.h"
#include "models/error.h"
#include "planner/near_ties.h"
#include "planner/schedule.h"
#include "tools/signals.h"

namespace pw::tools {

std::string describe_configuration(const planner::Plan& plan) {
  const int k = plan.threads_per_stage > 0 ? plan.threads_per_stage : 1;
  const int s = plan.num_stages();
  return std::to_string(s) + " stage" + (s == 1 ? "" : "s") + " x " + std::to_string(k) + " thread" +
         (k == 1 ? "" : "s") + ", " + std::string(planner::to_string(plan.schedule)) + ", " +
         std::to_string(plan.num_micro_batches) + " x " + std::to_string(plan.micro_batch_size);
}

TrialReport run_trials(const models::Model& model, const models::Profile& profile, const models::Cluster& cluster,
                       const planner::PlanRequest& request, const std::vector<planner::PlanCandidate>& candidates,
                       int rounds, double band, double seconds) {
  if (rounds < 0) throw InputError("--trials: expected rounds >= 0, got " + std::to_string(rounds));
  if (!(seconds >= 0)) throw InputError("--trial-seconds: expected seconds >= 0, got " + std::to_string(seconds));
  TrialReport rep;
  const std::vector<planner::PlanCandidate> ties = planner::near_ties(candidates, band, kTrialMaxPlans);
  if (rounds == 0 || ties.size() < 2) return rep;
  for (const planner::PlanCandidate& c : ties) {
    planner::PlanRequest r = request;
    r.threads_per_stage = c.threads_per_stage;
    r.micro_batches = c.micro_batches;
    const planner::PlanOutcome o = planner::make_plan(profile, cluster, r);
    if (!o.feasible) continue;  // priced as fitting by the joint search; checked again here
    rep.entries.push_back({c, o.plan, {}});
  }
  if (rep.entries.size() < 2) {
    rep.entries.clear();
    return rep;
  }
  exec::PipelineRunOptions ro;
  ro.steps = kTrialSteps;
  ro.warmup_steps = kTrialWarmupSteps;
  // The plan's optimizer as the executor runs it (sgd without momentum, sgd-momentum 0.9, adam;
  // models/optimizer_memory.h), at `run`'s default learning rate.
  ro.optimizer = exec::optimizer_for_profile(request.optimizer);
  ro.optimizer.lr = exec::default_learning_rate(ro.optimizer.kind);
  ro.stop_requested = [] { return StopSignals::stop_requested(); };
  StopSignals signals;
  const int max_rounds = std::max(rounds, kTrialMaxRounds);
  std::fprintf(stderr,
               "trials: %zu plans predicted within %.0f%% of the fastest; %d round%s of %d steps each, up to %d "
               "while the medians are within %.0f%% and %.0f s allow\n",
               rep.entries.size(), 100 * band, rounds, rounds == 1 ? "" : "s", kTrialSteps, max_rounds,
               100 * kTrialSettleMargin, seconds);
  const auto measured = [&rep] {  // each entry's runs so far
    std::vector<std::vector<double>> m;
    for (const TrialEntry& e : rep.entries) m.push_back(e.measured_ms);
    return m;
  };
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < max_rounds; ++round) {
    const size_t n = rep.entries.size();
    for (size_t i = 0; i < n; ++i) {
      TrialEntry& e = rep.entries[(i + static_cast<size_t>(round)) % n];
      const planner::Plan plan = exec::plan_for_run(e.plan);
      exec::check_plan_for_model(plan, model);
      ro.threads_per_worker = plan.threads_per_stage;
      const exec::PipelineRunResult r = exec::run_pipeline(model, plan, ro, nullptr);
      if (r.stopped) {
        const int sig = StopSignals::received();
        throw CommandExit(exit_code_for_signal(sig), "pipewright: stopped by " + StopSignals::name(sig) +
                                                         " during the trial runs; no plan written");
      }
      e.measured_ms.push_back(r.median_iteration_ms);
      std::fprintf(stderr, "  round %d: %-38s predicted %9.3f ms, measured %9.3f ms\n", round + 1,
                   describe_configuration(e.plan).c_str(), e.plan.predicted.iteration_time_s * 1e3,
                   r.median_iteration_ms);
    }
    rep.rounds = round + 1;
    rep.settled = planner::trials_settled(measured(), kTrialSettleMargin);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rep.rounds >= rounds && (rep.settled || elapsed >= seconds)) break;
  }
  rep.chosen = planner::fastest_by_median(measured());
  return rep;
}

}  // namespace pw::tools
