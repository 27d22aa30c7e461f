// PipelineRuntime: runs a Schedule on one worker thread per device, over an in-process
// transport, driving a StageCompute; every op is timed into a sim::Trace.
//
// Construction validates the schedule (planner::validate_schedule: coverage, steps,
// dependencies; throws InputError), starts one thread per device, pins it to its own cores
// (hwloc, exec/pinning.h; a warning() is set when there are fewer cores than devices) and
// sets its OpenMP thread count to its number of cores. Threads live until destruction.
//
// run_iteration() runs every device's op list once (one mini-batch) and returns when all are
// done. If any worker fails (compute exception, stall past options.timeout), the transport is
// cancelled, every worker unwinds, and the first failure is rethrown; a stall is reported as
// PipelineStall naming where each device waits. After a failure the runtime may be reused.
//
// Replicated stages (Schedule::stage_replicas): one worker per replica, each with its own
// StageCompute (the second constructor); gradients are all-reduced over the transport
// (exec/runtime/stage_worker.h).
// Update semantics come from the schedule: synchronous kinds step once per iteration (their
// `step` op), asynchronous kinds (pipedream-async, 2bw) call step after every backward (2bw:
// the compute applies the update once per mini-batch, see exec/runtime/run_compute.h).
// Thread-safety: one controlling thread calls run_iteration / trace().
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/machine/machine_load.h"
#include "exec/machine/pinning.h"
#include "exec/runtime/stage_compute.h"
#include "exec/runtime/stage_worker.h"
#include "exec/transport/transport_inproc.h"
#include "planner/schedule.h"
#include "sim/trace.h"

namespace pw::exec {

struct RuntimeOptions {
  int channel_capacity = 4;                               // unexpected messages buffered per channel
  std::chrono::nanoseconds spin = kDefaultTransportSpin;  // spin before sleeping (run_pipeline: transport_spin)
  std::chrono::milliseconds timeout{0};                   // per iteration; 0 = wait forever
  bool pin_threads = true;                                // hwloc binding of worker threads
  bool set_thread_count = true;                           // set each worker's OpenMP thread count:
  int threads_per_worker = 0;                             //   this many, or 0 = its number of cores
  bool record_trace = true;
  bool vertical_sync = false;                // PipeDream vertical sync (async kinds only)
  bool overlap_allreduce = true;             // replicated stages: bucketed, overlapped ring (stage_worker.h)
  int64_t allreduce_bucket_bytes = 4 << 20;  // ... its bucket size (<= 0: one bucket, started at the flush)
  // Where each device's worker queues its ops (exec/device_streams.h; stage_worker.h: lanes):
  // empty = every worker on the host, as before; else one per device, e.g. a CUDA stream slot
  // each. A worker on a device lane times its ops with that device's clock.
  std::vector<Device> lanes;
  // Optional (tests): the clock of each device's worker instead of the lane's own (host lanes
  // otherwise time with the host clock at each call).
  std::function<std::unique_ptr<StreamClock>(int device)> make_clock;
  // Optional: called on each worker thread after pinning (e.g. to warm up per-thread state).
  std::function<void(int device, const CoreSet& cores)> on_worker_start;
  // Optional: called on each worker thread at the start of every iteration, inside its timing,
  // before the worker's first op (run_pipeline: the worker that draws the next mini-batch). An
  // exception from it fails the iteration as a compute error does.
  std::function<void(int device, int iteration)> at_iteration_start;
};

// The settings of the worker of `device` under these options (the runtime owns the schedule,
// compute and transport it points to).
WorkerConfig worker_config(const RuntimeOptions& options, int device, const planner::Schedule* schedule,
                           StageCompute* compute, Transport* transport, Transport::Clock::time_point t0);

class PipelineRuntime {
 public:
  using Clock = Transport::Clock;

  PipelineRuntime(planner::Schedule schedule, StageCompute& compute, RuntimeOptions options = {});
  // Replicated stages: device_computes[d] is the compute device d drives (one per replica, so
  // replicas share no weights; devices of unreplicated stages may share one). Not owned.
  PipelineRuntime(planner::Schedule schedule, std::vector<StageCompute*> device_computes, RuntimeOptions options = {});
  ~PipelineRuntime();
  PipelineRuntime(const PipelineRuntime&) = delete;
  PipelineRuntime& operator=(const PipelineRuntime&) = delete;

  // Runs iteration number iterations_run(); returns its wall time in nanoseconds.
  int64_t run_iteration();
  // Runs fn(device) on every worker thread at once, as they are (pinned, with their OpenMP
  // teams), and returns when all are done; rethrows the first exception (the workers stay
  // usable). Between iterations only, from the controlling thread. Not traced, not an
  // iteration: `run --compare` measures its profile's copies here (exec/profile/co_run.h).
  void run_on_workers(const std::function<void(int device)>& fn);
  int iterations_run() const { return iterations_; }

  const planner::Schedule& schedule() const { return schedule_; }
  // Events and memory samples of every iteration so far; times in ns since construction.
  const sim::Trace& trace() const { return trace_; }
  const std::vector<CoreSet>& placement() const { return placement_; }
  // Oversubscription or pinning warnings, "" if none.
  const std::string& warning() const { return warning_; }

 private:
  void thread_main(int device);

  planner::Schedule schedule_;
  std::vector<StageCompute*> computes_;  // per device
  RuntimeOptions options_;
  InProcTransport transport_;
  Clock::time_point t0_;
  std::vector<std::unique_ptr<StageWorker>> workers_;
  std::vector<CoreSet> placement_;
  std::string warning_;
  sim::Trace trace_;
  int iterations_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  int remaining_ = 0;
  bool stop_ = false;
  int iteration_arg_ = 0;
  const std::function<void(int)>* task_ = nullptr;  // run_on_workers' fn, else an iteration
  Clock::time_point deadline_arg_;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::string> pin_errors_;
  std::vector<std::thread> threads_;
};

}  // namespace pw::exec
