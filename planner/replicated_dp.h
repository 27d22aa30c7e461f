// Replicated (PipeDream-style) partitioner: minimizes the steady-state time per mini-batch of
// the slowest stage (1/throughput of an asynchronous 1F1B pipeline), choosing cuts among
// CutStates and a data-parallel replica count per stage, on a hierarchy of levels solved
// bottom-up (OPTIMIZER.md §3, §5): at level l a segment gets M_l "machines" (groups of the level
// below); after level l a segment's cost becomes its best time on one whole level-l group.
//
// Two cost models (times in seconds per mini-batch, sizes in bytes):
// - quirks = true: PipeDream's optimizer exactly (OPTIMIZER.md §2-§5, quirks included):
//   base case (C + 4(r-1)P/(B r)/w)/r, last stage (C + 4(r-1)P/(B r))/r without /w,
//   activation terms 2*out/(B r') only when activation_comm, its memory rule
//   ceil((M-m)/r') * (activations + parameters) with Python-3 division, exact machine count unless
//   fewer_machines, straight = one replica per stage and exactly M stages.
// - quirks = false ("async", our corrected model): all-reduce 2(r-1)/r * P / B (+ latency) in
//   both cases (the group shares its level-l link, so no /w), inter-stage traffic
//   (in + out cut bytes)/B per direction plus latency, shared by the stage's r replicas and
//   overlapped with compute (max), exact cut bytes (tensors consumed outside the downset).
//   Memory, checked for the stages of level 0 (the devices): persistent optimizer bytes +
//   (in_flight - 1) stashed weight versions + in_flight stashed activations, in_flight =
//   ceil(devices from this stage on / r). Inside a level-0 group "devices from this stage on" are
//   the group's from this stage on plus every device outside the group (exact on a flat
//   cluster; on a hierarchy an upper bound for every group position, so each plan found fits).
//
// Complexity: S states, M machines per level, E = sum_j |preds(j)| (<= S^2/2):
// final level O(E * M^2 / 2), every inner level O(S * E * M^2 / 2) (all start rows are needed)
// in the worst case; in practice far less, pruned exactly: for a cell (j, m) and a last-stage
// width r' only the splits k whose lower bounds compute(i..k)/(m + 1 - r') and
// compute(k+1..j)/r' (in seconds per machine of the level; the mediant inequality makes them
// bounds at every level) stay within the incumbent are visited, a window of the predecessors
// sorted by compute found by binary search; wide windows are further cut by the suffix minima
// of the solved prefix cells (A[i][.][m'] over the states in compute order), walked outwards
// from a guessed crossing, stopped below by the exact last-stage time with the all-reduce
// (level 0) and, on prefix states with memory, by the monotone memory test. Ties resolve as
// PipeDream's loop order does (smallest k, then smallest r'), so the plan is the one the
// exhaustive loop finds (a candidate that can only tie and would lose is not evaluated).
// Inner levels' start rows are solved on first use, when the level above asks for one of their
// costs, under a budget derived from a bound G on the final value: a cell above G times the
// machines of the levels above is part of no plan within G, so its candidates are not
// evaluated; on the outermost level a cell is skipped when the states before or after it
// cannot fit in G on the machines left. A final value <= G proves the result exact. G is the
// single-stage bound H (two or more levels: the outermost DP with every inner segment one stage
// on all machines below, O(1) per cost, no inner row solved), or U = the whole model replicated
// on every outermost machine when that is smaller or H has no plan. An inner row's cells have their own budgets: its
// cost T enters the level above as a stage of r replicas taking (T + all-reduce there) / r, so T above G r minus that
// all-reduce, for every r the level above may give it (fewer when the states before the row
// need machines of the outermost level), is of no use. Before a candidate of an inner level
// makes a row be solved, its transfers and its last stage's time with the row's cost replaced
// by the compute bound must fit in the incumbent. With per-r_parent costs (two levels, corrected model,
// memory) a memory-bound row is solved again for an r_parent only when the level above asks.
// Memory O(S^2) doubles for the inner-level tables, O(E) for the sorted predecessor lists,
// plus O(S * M) per row being solved (rows nest: one per level at a time).
// Thread-safety: a pure function; it runs on the calling thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/cut_states.h"

namespace pw::planner {

struct ReplicatedLevel {
  int machines = 1;        // M_l
  double bandwidth = 1e9;  // bytes/s
  double latency_s = 0;    // per transfer (corrected model only)
};

struct ReplicatedOptions {
  bool quirks = true;
  bool straight = false;
  bool fewer_machines = false;
  bool activation_comm = true;  // quirks: --activation_compression_ratio 1 given
  bool use_memory_constraint = false;
  double memory_bytes = 16e9;
  // Corrected model only: scale of profile times/activations to one mini-batch, optimizer bytes
  // per parameter byte (total / weight bytes).
  double time_scale = 1e-9;  // profile ns -> seconds per mini-batch
  double activation_scale = 1.0;
  double persistent_per_parameter_byte = 4.0;
  // Visit every split instead of the windows the lower bounds leave (tests: same result).
  bool exhaustive_splits = false;
};

struct ReplicatedStage {
  int start = 0, end = 0;    // state range [start, end) as PipeDream prints it: layers
                             // members(end-1) minus members(start-1)
  std::vector<int> devices;  // replicas, ascending device ids
};

struct ReplicatedResult {
  bool feasible = false;
  double bottleneck_s = 0;              // "Time per stage in pipeline"
  std::vector<ReplicatedStage> stages;  // finest-level stages in pipeline order
  std::string table;                    // per level "(start, end) time replicas" lines
  // Diagnostics of the budgets (tests): the bound G the final attempt ran under and the
  // single-stage bound H (see replicated_partition; 0 when not computed, +inf when no plan).
  double budget_s = 0;
  double single_stage_bound_s = 0;
};

ReplicatedResult replicated_partition(const CutStates& s, const std::vector<ReplicatedLevel>& levels,
                                      const ReplicatedOptions& o);

// Re-evaluates a hierarchical plan: stages grouped per level by the device groups they occupy
// (outer stages = maximal runs of stages on the same set of level-l groups). Returns the
// bottleneck under the same cost model; used to check that printed plans reproduce the DP value.
double replicated_evaluate(const CutStates& s, const std::vector<ReplicatedLevel>& levels, const ReplicatedOptions& o,
                           const std::vector<ReplicatedStage>& stages);

}  // namespace pw::planner
