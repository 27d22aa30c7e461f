// near_ties: which of the planner's candidates are too close to call from a profile, and which
// one measured fastest when they were run (`plan --measure` runs the near ties for a few steps
// and keeps the fastest; tools/plan_trials.h).
//
// Why: on a shared machine two plans predicted within a few percent of each other swap places
// from minute to minute (bench/RESULTS.md: the default gpt's 1 stage on 2 threads and
// 2 stages x 8 micro-batches measured 3% apart one way, then 6% apart the other, 6 minutes
// later). A profile prices each layer; it cannot tell which configuration this machine favours
// right now. Running each near tie for a few steps can.
//
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include "planner/planner.h"

namespace pw::planner {

// The candidates (ordered fastest first, as PlanOutcome::candidates) predicted within `band`
// (a fraction, >= 0) of the fastest, at most `max_count` (>= 1) of them, fastest first. When
// there are more than max_count, each shape (stage count x threads per stage) gets its best
// candidate in before any shape gets a second. The fastest is always in; an empty list gives
// an empty list. Throws InputError for a negative band or max_count < 1.
std::vector<PlanCandidate> near_ties(const std::vector<PlanCandidate>& candidates, double band, int max_count);

// Index of the list with the smallest median (the middle value; the mean of the two middle
// ones for an even count); the earlier list on a tie. -1 when every list is empty (an empty
// list never wins).
int fastest_by_median(const std::vector<std::vector<double>>& measured);

// Whether more trial rounds could still change the winner by more than `margin` (a fraction,
// >= 0): false (not settled) while fastest_by_median's winner is not ahead of every other list
// with a sample by more than margin of its own median, or while any list is empty. One list
// with a sample (or a winner clear of all others) is settled. Why: on this kind of machine two
// plans within a few percent swap places from minute to minute; more rounds spread over more
// of the machine's states call such a tie better than three, and rounds are cheap next to a
// training run, but a clear winner needs no more. Throws InputError for a negative margin.
bool trials_settled(const std::vector<std::vector<double>>& measured, double margin);

}  // namespace pw::planner
