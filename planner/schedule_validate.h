// Schedule validator: checks that a Schedule (generated or read from JSON) can be executed.
//
// Checks, in order, throwing pw::InputError with a one-line message on the first failure:
// - shape: num_devices >= 1, num_stages >= num_devices (unreplicated), one op list per
//   device, stage_device in range, every op's stage / micro-batch in range and on the device
//   that owns it (Schedule::device_of); replicated schedules: stage_replicas[s][0] ==
//   stage_device[s], every device runs one replica of one stage, asynchronous kinds have a
//   multiple of every replica count of micro-batches; an allreduce with micro_batch -1 runs on
//   a replica of its stage;
// - coverage: for every (stage, micro-batch) exactly one F and either exactly one BW or
//   exactly one B and one W ("missing F(2,5)", "duplicate BW(0,1) on device 0");
// - step: synchronous kinds end every device list with exactly one step; asynchronous kinds
//   have none; explicit send/recv are not accepted (communication is implicit);
// - dependencies (DESIGN.md "Simulation semantics"): running every device in list order,
//   F(s,j) needs F(s-1,j); B/BW(s,j) needs F(s,j) and the backward of (s+1,j); W(s,j) needs
//   B(s,j); allreduce(s,j) (j >= 0) needs the last backward op of (s,j); in synchronous
//   kinds an allreduce of a replicated stage waits for its group on every replica (the
//   n-th allreduce(s,-1) of each replica, or those of micro-batches j / r; sim/engine.h).
//   An order that cannot finish is reported as
//   "deadlock: device 1 waits at B(1,3) for B(2,3); device 2 waits at ...".
// Runs in O(number of ops). Thread-safe (no shared state).
#pragma once

#include <string>

#include "planner/schedule.h"

namespace pw::planner {

void validate_schedule(const Schedule& schedule);

// "F(2,5)", "BW(0,1)", "step", "allreduce(3)", "allreduce(3,5)".
std::string op_label(const Op& op);

}  // namespace pw::planner
