// PlanRequest: what a caller asks the planner for (planner/planner.h make_plan, and
// sim::plan_with_prediction for every schedule), with its typed choices and their names.
//
// The names are the flags' and the plan file's words (`--objective sync`, inputs.options in a
// plan file); parse_* turn a word into a choice or throw InputError naming `where`, the word
// and the words expected; to_string gives the word back (parse(to_string(x)) == x).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "models/defaults.h"
#include "planner/schedule.h"

namespace pw::planner {

// sync: a synchronous pipeline, one device per stage (planner/sync_dp.h); async: replicated
// asynchronous PipeDream 1F1B under our cost model (planner/replicated_dp.h); pipedream:
// PipeDream's own optimizer's cost model exactly.
enum class Objective { sync, async, pipedream };
// dp: the optimal partition; gpipe_greedy and even: the baselines of the sync objective.
enum class Partitioner { dp, gpipe_greedy, even };
// automatic ("auto"): the planner decides per stage, re-materializing only where memory needs it.
enum class RecomputeChoice { automatic, on, off };

std::string_view to_string(Objective o);        // "sync", "async", "pipedream"
std::string_view to_string(Partitioner p);      // "dp", "gpipe-greedy", "even"
std::string_view to_string(RecomputeChoice r);  // "auto", "on", "off"
Objective parse_objective(std::string_view s, const std::string& where);
Partitioner parse_partitioner(std::string_view s, const std::string& where);
RecomputeChoice parse_recompute_choice(std::string_view s, const std::string& where);

// The schedule asked for: nullopt is "auto" (1f1b for the sync objective, pipedream-async for
// the others).
std::string to_string(const std::optional<ScheduleKind>& s);
std::optional<ScheduleKind> parse_schedule_request(std::string_view s, const std::string& where);

// A micro-batch count asked for: 0 is "auto" (the planner searches every divisor of the batch).
std::string micro_batches_to_string(int count);
// "auto" or a positive decimal integer; anything else throws.
int parse_micro_batches_request(std::string_view s, const std::string& where);

struct PlanRequest {
  int64_t batch = 0;      // 0 => profile.micro_batch
  int micro_batches = 0;  // 0 => auto; a count must divide the batch
  // nullopt => auto. make_plan plans gpipe, 1f1b, zb-h1 and pipedream-async;
  // sim::plan_with_prediction also zb-h2 and interleaved-1f1b (sim/plan_prediction.h).
  std::optional<ScheduleKind> schedule;
  Objective objective = Objective::sync;
  RecomputeChoice recompute = parse_recompute_choice(models::kDefaultRecompute, "models::kDefaultRecompute");
  Partitioner partitioner = Partitioner::dp;
  std::string optimizer = models::kDefaultOptimizer;
  bool straight = false, fewer_devices = false, activation_comm = false;
  int64_t memory_limit_bytes = 0;  // 0 => cluster device memory; pipedream: 0 => no constraint
  int threads_per_stage = 0;       // measured points: only this many cores per stage (0 => search)
  // Sync "dp": always run the DP, also where repeated identical layers have the exact fast
  // solver (planner/uniform_sync.h); for tests and benchmarks that compare the two.
  bool exact_partitioning = false;
  // interleaved-1f1b (sim::plan_with_prediction): virtual stages per device, 0 => 2; make_plan
  // refuses any other value than 0.
  int chunks = 0;
};

}  // namespace pw::planner
