// The figures that rank plans, in the planner's own model (the simulator's, measured on a run,
// are defined in sim/report.h). Per iteration (one mini-batch; asynchronous plans: the
// steady-state time per mini-batch), with t_s = forward_ns + backward_ns of stage s (one
// replica, per micro-batch), r_s its replicas, m micro-batches, I = predicted iteration:
//   busy of each device of stage s: b_s = m t_s / r_s, plus its all-reduce (synchronous: once
//     per iteration; asynchronous: m / r_s times);
//   idle_share      = 1 - (sum_s r_s b_s) / (D I), D = sum_s r_s devices;
//   stage_imbalance = 1 - (sum_s r_s b_s / D) / max_s b_s;
//   schedule_bubble = the idle share of the same schedule with every device's work equal and
//     free transfers: synchronous (fill-drain model of planner/sync_dp.h) (D - 1) / (m + D - 1),
//     i.e. (p - 1) / (m + p - 1) without replicas; asynchronous 0 (no flush).
// What idle_share has beyond schedule_bubble and stage_imbalance is mostly communication
// (transfers on the critical path, all-reduce) and the optimizer step.
// All three are 0 when the iteration or every busy time is 0.
#pragma once

#include "planner/plan.h"

namespace pw::planner {

// Sets plan.predicted.schedule_bubble, stage_imbalance and idle_share from the stages'
// predictions, the replica counts, the micro-batch count and predicted.iteration_time_s.
void set_plan_figures(Plan& plan);

}  // namespace pw::planner
