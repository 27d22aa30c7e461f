// A checkpoint's stages between MPI rank 0 and the ranks that run them (run_ranks.h): rank 0 is
// the only process that touches the checkpoint directory, for saves and resumes alike, so the
// directory needs to exist on rank 0's host only (no shared file system).
//
// A stage crosses as a header (optimizer counters, then each tensor's name and shape) followed
// by one message per tensor, straight from the sender's tensors into the receiver's (World::
// send_bytes: chunks of at most 1 GiB). One stage is in flight at a time, so rank 0 holds its own
// stages and one other: the checkpoint's size has no limit of MPI's or of rank 0's memory.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "exec/runtime/checkpoint.h"
#include "exec/runtime/run_compute.h"
#include "exec/transport/mpi_world.h"
#include "planner/schedule.h"

namespace pw::exec {

// Whether pipeline device `device` runs stage s (as any of its replicas).
bool runs_stage(const planner::Schedule& sch, int s, int device);

// How long a rank may wait for rank 0 to get to its stage, or to finish with the last one:
// rank 0 writes (or reads) the stages before it meanwhile, which takes as long as the disk
// needs, whatever the step deadline.
inline constexpr std::chrono::minutes kRank0TurnWait{10};

// A deadline for a wait on rank 0's turn that starts now: kRank0TurnWait plus `timeout`.
mpi::World::Clock::time_point rank0_turn_deadline(std::chrono::milliseconds timeout);

// Every stage's state, handed to `use` on rank 0 in stage order: its own stages' from its
// compute (downloaded from a GPU), the others' received from the rank running replica 0 of
// them. Rank 0 waits at most `timeout` for each stage, from when it asks for it; the rank
// sending a stage waits until rank0_turn_deadline(timeout), counted from the call, since
// rank 0 handles (writes) the stages before it first. Collective: every rank calls it between
// iterations.
void stages_to_rank0(LayerStageCompute& compute, const planner::Schedule& sch, mpi::World& world,
                     std::chrono::milliseconds timeout, const std::string& what,
                     const std::function<void(int, const StageState&)>& use);

// --resume under MPI: rank 0 sends every rank the checkpoint's step and data position (filled
// into `info` on the other ranks; on rank 0 `info` is the checkpoint opened from `dir`), then reads
// every stage's file and sends it to each rank that runs the stage (every replica gets replica
// 0's saved state); each rank loads what it receives into its stages (uploaded to its GPU) and
// their counters. On rank 0 a stage it does not run is read into tensors shaped as the running
// rank's (that rank sends their names and shapes first), so load_stage checks the file against
// the stage the rank really runs. Collective: every rank calls it with the same schedule; only
// rank 0 reads `dir`. The protocol always runs to its end: a failure on any rank (a corrupt file
// on rank 0: InputError naming it; an upload on another) is rethrown by that rank after the
// last stage, so no rank waits on one that gave up.
void resume_from_rank0(LayerStageCompute& compute, const planner::Schedule& sch, mpi::World& world,
                       const std::string& dir, CheckpointInfo& info, mpi::World::Clock::time_point deadline);

}  // namespace pw::exec
