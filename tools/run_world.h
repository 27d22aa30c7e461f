// The MPI world `pipewright run` runs in under mpirun (exec/transport/mpi_world.h), and, in a
// build without MPI, a stand-in of the same shape: there a launch by mpirun is detected and
// refused (tools/cmd_run.cc), and running on ranks throws.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <string>

#include "exec/runtime/run_pipeline.h"
#include "models/layer_graph.h"
#include "planner/plan.h"
#include "tools/training_flags.h"
#ifdef PW_HAVE_MPI
#include "exec/transport/mpi_world.h"
#endif

namespace pw::tools {

#ifdef PW_HAVE_MPI
using World = exec::mpi::World;
#else
struct World {
  int rank() const { return 0; }
  int size() const { return 1; }
  int local_rank() const { return 0; }
  int local_size() const { return 1; }
  void barrier(std::chrono::steady_clock::time_point, const std::string&) {}
  [[noreturn]] void abort(int code);
};
#endif

// Whether this process was started by mpirun (or another MPI launcher).
bool launched_by_mpirun();

// exec::run_pipeline_ranks on `world`; without MPI it throws InputError.
exec::PipelineRunResult run_on_ranks(const models::Model& model, const planner::Plan& plan,
                                     const exec::PipelineRunOptions& o, World& world,
                                     const std::function<void(const exec::StepReport&)>& progress);

// This rank's place for run's memory check: its rank, the device its stages run on (as the
// MPI runtime picks it, exec/runtime/device_lanes.h rank_gpu: the host, or one GPU), and
// whether every rank of the job is on this host.
RankPlace rank_place(World& world, const exec::PipelineRunOptions& o);

// exec/machine/memory_crash.h's line for this rank ("pipewright: rank R: ...", rank 0 without),
// installed again over the crash handlers MPI_Init put in.
void install_rank_crash_line(int rank);

// A rank's own failure outside the run (out of memory building its stages): main's line and
// exit code for `e` (tools/exit_status.h), naming the rank after "pipewright: " unless rank 0.
int rank_failure_line(const std::exception_ptr& e, int rank, std::string& line);

// A job mpirun is tearing down (tools/mpi_stop.h): the other ranks wait here, at most 5 s,
// until rank 0 has written its outputs and its line, since mpirun kills the remaining ranks as
// soon as one of them exits. A rank 0 that is gone or late is not waited for.
void wait_for_rank0_outputs(World& world);

}  // namespace pw::tools
