// Co-run: run the same measurement on every worker's cores at once, so that what one worker
// measures includes the memory-bandwidth and cache contention of its neighbours (DESIGN.md,
// "Fidelity"). A pipeline's workers all compute at the same time; a layer timed while the
// other cores idle is faster than it will be in the pipeline.
//
// co_run(workers, threads, fn) starts `workers` threads; thread w is pinned to its own block
// of cores (Machine::assign(workers), as the pipeline runtime places its workers), sets its
// OpenMP team to `threads` (0: its cores), and calls fn(w). Returns when all are done;
// rethrows the first exception after joining every thread. Pinning refused by the OS is not
// an error (the copies still run at once). `barrier()` of the returned context lets the
// copies start each timed pass together.
#pragma once

#include <functional>

namespace pw::exec {

class CoRunBarrier {
 public:
  virtual ~CoRunBarrier() = default;
  virtual void arrive_and_wait() = 0;
};

void co_run(int workers, int threads, const std::function<void(int worker, CoRunBarrier& barrier)>& fn);

// Threads the caller already has, one per copy, each pinned to worker w's cores with its
// OpenMP team set: run(body) calls body(w) on thread w for every w in [0, workers) at once and
// returns when all are done (PipelineRuntime::run_on_workers: a run's own workers, between
// its iterations). Their OpenMP teams are the run's: copies on threads of their own would add
// teams of their own, and libgomp, once it manages more threads than there are CPUs, cuts
// every idle thread's spin to about a thousand iterations (exec/profiler.cc, the bytes pass).
struct CopyThreads {
  int workers = 0;
  std::function<void(const std::function<void(int worker)>& body)> run;
};

// co_run on such threads (fn as above; an exception from fn is rethrown after every copy ended).
void co_run_on(const CopyThreads& threads, const std::function<void(int worker, CoRunBarrier& barrier)>& fn);

}  // namespace pw::exec
