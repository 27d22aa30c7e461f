// plan_trials: `plan --measure` settles the near ties of its search by running them.
//
// The planner prices every (threads per stage, micro-batch count) on the measured profile
// (planner::PlanOutcome::candidates). Those predicted within kTrialBand of the fastest
// (or `band`; planner/near_ties.h: too close to call from a profile on a machine whose speed moves) are
// each made into their own plan (make_plan with that thread count and micro-batch count) and
// run here, on threads, for kTrialWarmupSteps + kTrialSteps steps as `run --plan` would run
// them (the request's optimizer: adam, or sgd with momentum for the others), in rounds
// interleaved so that a slow minute falls on every candidate alike. At least `rounds` rounds;
// then more, up to kTrialMaxRounds, while the medians are still a tie (planner::trials_settled
// with kTrialSettleMargin) and the trials have taken less than `seconds` in all: a tie called
// from three rounds on a machine whose speed flips within seconds is often called wrong, and
// the next rounds cost a few seconds. Each round starts one plan later than the round before
// (rotated), so a slow stretch at the start of a round does not always fall on the same plan.
// The fastest median iteration wins. Progress and results
// go to stderr, one line per trial run.
//
// A signal (SIGINT / SIGTERM) ends the trials after the current step: CommandExit with
// 128 + signal, nothing written.
#pragma once

#include <vector>

#include "models/cluster.h"
#include "models/layer_graph.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "planner/planner.h"

namespace pw::tools {

// Candidates predicted within 25% of the fastest, at most 6 of them. Why so wide: a measured
// profile's price of one candidate moved by 13-23% over five `plan --measure` runs minutes
// apart on an idle VM (2 stages x 4 micro-batches: 29.1-35.8 ms), and further on a busy one
// (bench/RESULTS.md: the default gpt's 2 stages x 16 micro-batches was once priced at least 32%
// over what it ran, outside a 15% band, and the trials chose a plan 15% slower). A trial of the
// default gpt costs about 0.3 s a plan and round (13 s for the whole `plan --model default
// --measure`, 3 rounds of 6 plans).
inline constexpr double kTrialBand = 0.25;
inline constexpr int kTrialMaxPlans = 6;
inline constexpr int kTrialWarmupSteps = 3;
inline constexpr int kTrialSteps = 8;
inline constexpr double kTrialSeconds = 12;  // no round past the minimum starts after this
inline constexpr int kTrialMaxRounds = 12;
inline constexpr double kTrialSettleMargin = 0.03;  // a median ahead by more than 3% is settled

struct TrialEntry {
  planner::PlanCandidate candidate;
  planner::Plan plan;               // make_plan's plan for the candidate's k and m
  std::vector<double> measured_ms;  // median iteration of each trial run (one per round)
};

struct TrialReport {
  std::vector<TrialEntry> entries;  // the near ties, best predicted first
  int chosen = -1;                  // index of the fastest median (entries[0] when only one)
  int rounds = 0;                   // rounds run
  bool settled = false;             // the winner was clear by kTrialSettleMargin when they ended
};

// No trials (an empty report) when fewer than two candidates are near ties, or rounds == 0.
// Throws InputError for rounds < 0, a negative band or negative seconds (0: exactly `rounds`).
TrialReport run_trials(const models::Model& model, const models::Profile& profile, const models::Cluster& cluster,
                       const planner::PlanRequest& request, const std::vector<planner::PlanCandidate>& candidates,
                       int rounds, double band = kTrialBand, double seconds = kTrialSeconds);

// "1 stage x 2 threads, 1 x 16" / "2 stages x 1 thread, 8 x 2": the configuration of a plan.
std::string describe_configuration(const planner::Plan& plan);

}  // namespace pw::tools
