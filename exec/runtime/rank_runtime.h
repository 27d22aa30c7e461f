// RankRuntime: runs ONE device's op list of a Schedule in this process — the device is this
// MPI rank (device == world.rank(), one rank per pipeline device, i.e. per replica of a
// replicated stage, devices numbered as the Schedule numbers them) — over an MpiTransport,
// driving a StageCompute with the same StageWorker as the threaded PipelineRuntime.
//
// Construction (collective: every rank constructs one, in the same order) validates the
// schedule (planner::validate_schedule; InputError) and that world.size() equals the schedule's
// devices (InputError naming both numbers), pins the calling thread to this rank's share of
// its host's cores (hwloc: Machine::assign(ranks on this host)[local rank]), sets the OpenMP
// thread count as PipelineRuntime does, and synchronises the time origin t0: every rank takes
// t0 right after a barrier, so trace times of all ranks share one origin (to within the
// barrier's exit skew, microseconds on one host).
// Lanes (options.lanes, one per device, or empty for the host): the worker queues this rank's
// ops on lanes[rank] (a GPU stream slot, exec/runtime/run_ranks.h) and times them with that
// lane's clock; payloads to and from other ranks cross as host tensors (MpiTransport stages
// them; the worker uploads what it receives).
//
// run_iteration() runs this rank's ops of iteration iterations_run() and returns its wall time
// (ns). It does not synchronise with the other ranks at the end (the driver does, see
// exec/runtime/run_ranks.h). Every wait has a deadline: options.timeout per iteration, or
// kDefaultTimeout when that is 0; set_timeout changes it for the iterations and collectives
// that follow (the driver's step deadline). A wait that passes it throws mpi::TransportTimeout
// without telling the other ranks (the driver finds out which rank stopped responding).
// Failures: when this rank's compute throws or its wait times out, run_iteration tells every
// other rank (World::notify_failure) and throws RankFailure "rank R failed at OP: what"; when
// another rank failed first, it throws that rank's PeerFailed. A NaN or Inf (NumericalFault)
// is told to the other ranks as kNumericalNotice + "rank R, op OP: <the fault's what()>" and
// thrown as RankNumericalFault with that text (without the prefix); memory running out
// (exec/backend_errors.h: out_of_memory_text) likewise with kOutOfMemoryNotice, as
// RankOutOfMemory. The runtime is not
// reusable after a failure (the job is meant to end, see run_ranks.h).
//
// Threading: everything on the thread that created the World (MPI_THREAD_FUNNELED).
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "exec/machine/pinning.h"
#include "exec/runtime/pipeline_runtime.h"
#include "exec/runtime/stage_compute.h"
#include "exec/runtime/stage_worker.h"
#include "exec/transport/mpi_world.h"
#include "exec/transport/transport_mpi.h"
#include "planner/schedule.h"
#include "sim/trace.h"

namespace pw::exec {

class RankFailure : public std::runtime_error {
 public:
  RankFailure(int rank, const std::string& text) : std::runtime_error(text), rank_(rank) {}
  int rank() const { return rank_; }

 private:
  int rank_;
};

// A fault that every rank of the job reports alike (the same rank and text on each, printed once
// by rank 0), leaving MPI normally instead of aborting (exec/runtime/run_ranks.h). rank(): the
// rank it hit.
class RankFault : public std::runtime_error {
 public:
  RankFault(int rank, const std::string& text) : std::runtime_error(text), rank_(rank) {}
  int rank() const { return rank_; }

 private:
  int rank_;
};

// A NaN or Inf in training on some rank of the job. what(): "rank R, op OP: step N, stage S,
// layer \"L\": Q is K" (exec/numerics.h names step, stage, layer and quantity).
class RankNumericalFault : public RankFault {
 public:
  using RankFault::RankFault;
};

// Memory ran out on some rank during the run. what(): what the commands print after
// "infeasible: " (exec/backend_errors.h: out_of_memory_text), then " (at OP, iteration I)" or
// " (outside the ops of a step)".
class RankOutOfMemory : public RankFault {
 public:
  using RankFault::RankFault;
};

// Prefixes of the abort notices that carry a RankNumericalFault's and a RankOutOfMemory's text
// to the other ranks.
inline constexpr const char* kNumericalNotice = "numerical fault: ";
inline constexpr const char* kOutOfMemoryNotice = "out of memory: ";

class RankRuntime {
 public:
  using Clock = Transport::Clock;
  static constexpr std::chrono::milliseconds kDefaultTimeout{600000};

  RankRuntime(planner::Schedule schedule, StageCompute& compute, mpi::World& world, RuntimeOptions options = {});

  int64_t run_iteration();
  int iterations_run() const { return iterations_; }
  int device() const { return world_.rank(); }

  const planner::Schedule& schedule() const { return schedule_; }
  // This rank's events and memory samples so far; times in ns since the shared t0.
  const sim::Trace& local_trace() const { return trace_; }
  // Collective. Rank 0 gets every rank's trace merged (device order, each in time order);
  // other ranks get an empty Trace.
  sim::Trace gather_trace();
  // A deadline for a collective that starts now (the runtime's timeout from now).
  Clock::time_point deadline() const { return Clock::now() + timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  // Steps run before this runtime's first iteration (a resumed run's): a NumericalFault's step
  // is told counted over the whole run, as exec/numerics.h and a threaded run count it.
  void set_first_step(int64_t step) { first_step_ = step; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  const CoreSet& placement() const { return placement_; }
  // Oversubscription or pinning warning of this rank, "" if none.
  const std::string& warning() const { return warning_; }

 private:
  planner::Schedule schedule_;
  mpi::World& world_;
  RuntimeOptions options_;
  std::chrono::milliseconds timeout_;
  int64_t first_step_ = 0;
  MpiTransport transport_;
  Clock::time_point t0_;
  std::unique_ptr<StageWorker> worker_;
  CoreSet placement_;
  std::string warning_;
  sim::Trace trace_;
  int iterations_ = 0;
};

}  // namespace pw::exec
