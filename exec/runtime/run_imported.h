// run_imported: running a schedule that did not come from the plan's kind — one imported from
// PyTorch's CSV action format (`run --schedule-csv F`, planner/schedule_csv.h) — on the same
// runtime. The plan then only says where the layers are cut and which device holds each
// virtual stage (even_plan_for_schedule, run_pipeline.h); the schedule says the order of ops.
#pragma once

#include "planner/plan.h"
#include "planner/schedule.h"

namespace pw::exec {

// Throws InputError (one line) unless `schedule` is valid (planner::validate_schedule) and
// matches `plan`: unreplicated, the same number of virtual stages, micro-batches and chunks,
// and every stage on the device the plan gives it.
void check_imported_schedule(const planner::Plan& plan, const planner::Schedule& schedule);

}  // namespace pw::exec
