// The flags `run` (a pipeline) and `train` (one process) share: --steps --lr --optimizer --seed
// --threads --data --prefetch --json --checkpoint --checkpoint-every --resume --log-every,
// declared and checked here once, and the progress lines both print (ProgressLines). Where the two commands mean a flag
// slightly differently (threads per worker or per process, warm-up steps counted by checkpoints), each gives its own
// help text through TrainingFlagHelp; the checks and defaults other than --steps are the same.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "exec/data/loader.h"
#include "exec/optimizer.h"
#include "exec/tensor.h"
#include "models/defaults.h"
#include "models/layer_graph.h"
#include "planner/plan.h"
#include "planner/schedule.h"

namespace pw::tools {

struct TrainingFlags {
  int64_t steps = 0;  // the command's default, set before add_training_flags
  double lr = -1;     // -1: the optimizer's default (exec::default_learning_rate)
  std::string optimizer = models::kDefaultOptimizer;
  uint64_t seed = 1;
  int threads = 0;  // 0: not given (each command's own default)
  std::string data;
  int prefetch = exec::kDefaultPrefetch;
  bool json = false;
  std::string checkpoint, resume;
  int64_t checkpoint_every = 0;
  int64_t log_every = 0;  // 0: ProgressLines' default
};

// The help texts that differ between the commands.
struct TrainingFlagHelp {
  const char* steps;
  const char* threads;
  const char* prefetch;
  const char* json;
  const char* checkpoint_every;
  const char* resume;
};

// Registers the shared flags on `sub`, bound to `f` (--help shows f's values as the defaults).
void add_training_flags(CLI::App* sub, TrainingFlags& f, const TrainingFlagHelp& help);

// Checks what can be checked without the model, before anything is read or allocated:
// --optimizer one the CPU executor trains, --steps >= 1, --lr > 0 when given, --prefetch >= 0,
// --threads in [1, 4 x cores] when given, --checkpoint a directory that can be written (where
// `writes_checkpoints`: under mpirun only rank 0 touches the directory, on its own host),
// --checkpoint-every >= 0 and only with --checkpoint, --log-every >= 0. Throws InputError naming
// the flag.
void check_training_flags(const TrainingFlags& f, const CLI::App& sub, bool writes_checkpoints = true);

// The optimizer the flags ask for (--optimizer, --lr or its default), by the one vocabulary of
// models/optimizer_memory.h: sgd (momentum 0), sgd-momentum (0.9), adam. Throws InputError naming
// --optimizer for a name the executor cannot train (rmsprop, adam-mixed) or does not know.
exec::OptimizerOptions training_optimizer(const TrainingFlags& f);

// Before anything is allocated: the bytes training `model` with `optimizer` would take at
// `micro_batch` samples with `in_flight` micro-batches alive (models::estimated_training_bytes)
// against the most this process can hold: the machine's physical memory, or less under a cgroup
// memory limit or a ulimit (exec/machine/memory.h: memory_bound; nothing is checked where none
// can be read). InputError("<flags>: training M needs at least X GiB, more than this machine's
// Y GiB of memory" or "... more than the Y GiB this process may still map under ulimit -d") when
// it does not fit.
// On a CUDA `device` the bound is the card's memory ("... more than cuda:0's Y GiB of memory").
void check_fits_in_memory(const models::Model& model, const exec::OptimizerOptions& optimizer, int64_t micro_batch,
                          int64_t in_flight, const std::string& flags, exec::Device device = exec::Device::cpu());

// Where an MPI rank runs, for run's memory check: its pipeline device (its rank), the device
// its stages run on (the host or its GPU), and whether every rank of the job is on this host
// (then the host holds all of them).
struct RankPlace {
  int rank = 0;
  exec::Device device = exec::Device::cpu();
  bool all_on_this_host = false;
  // --checkpoint or --resume: rank 0 holds one other rank's stage at a time, received to be
  // written, or read to be sent (exec/runtime/rank_checkpoint.h).
  bool writes_checkpoints = false;
};

// `run`'s check, before anything is allocated: the peak the plan is predicted to hold
// (exec/runtime/run_memory.h: its schedule's micro-batches in flight per worker, simulated) on
// the host against memory_bound(), or on `device` (CUDA: the workers split over `gpus` cards as
// the run lays them out) against each card's memory. InputError("<flags>: running M as planned
// needs X GiB [on cuda:N (workers a-b)], more than <the bound>"). `schedule`: an imported one
// (null: the plan's). Under mpirun (`rank` given) each rank checks what its process holds
// (predicted_rank_memory): its own worker's peak, or every worker's when all ranks share this
// host, on its GPU or the host, and on the host rank 0's checkpoint writing. A model the cost
// model cannot price (imported opaque layers) is checked by the whole-model estimate on the
// host only.
void check_run_fits_in_memory(const models::Model& model, const planner::Plan& plan,
                              const exec::OptimizerOptions& optimizer, const planner::Schedule* schedule,
                              exec::Device device, int gpus, const RankPlace* rank, const std::string& flags);

// `run --compare` on the host, before the run: the measurement of the prediction it makes after
// (or between) the run's steps (exec/runtime/run_compare.h: prediction_measurement_bytes) against
// the profiler's share (kMeasureMemoryShare) of memory_bound(). InputError("--compare: measuring
// the prediction needs about X GiB (N copies of M's stages at micro-batch B), more than 80% of
// <the bound>; run without --compare") when it cannot fit, so that no run's work is lost to it.
void check_compare_fits_in_memory(const models::Model& model, const planner::Plan& plan,
                                  const exec::OptimizerOptions& optimizer, int threads);

// The exits both commands take, thrown as CommandExit (tools/signals.h): a NaN or Inf (exit 4,
// naming the last good checkpoint in `checkpoint_dir`, if any) and a stop by SIGINT / SIGTERM
// after `done` of `total` steps (exit 130 / 143, naming the checkpoint written at
// `checkpoint_step`, -1 for none, and how to resume from it).
[[noreturn]] void exit_numerical_fault(const std::string& what, const std::string& checkpoint_dir);
// exit_numerical_fault's line (an MPI job's rank 0 prints it itself).
std::string numerical_fault_line(const std::string& what, const std::string& checkpoint_dir);
// `sig`: the signal that stopped the run (0: StopSignals::received(); under mpirun the one the ranks agreed on).
[[noreturn]] void exit_stopped(int64_t done, int64_t total, const std::string& checkpoint_dir, int64_t checkpoint_step,
                               int sig = 0);

// Progress lines on stderr, as `train` and `run` print them: on a terminal one line rewritten in
// place (at most every 0.1 s, and the last step's); otherwise a line every --log-every steps (and
// the last) when given, else none until the run has lasted 10 s, then one every ~10% of the
// steps or 10 s and the last, so a short run leaves a quiet stderr. `banner` (may be empty) goes
// out once, just before the first line that does. Not thread-safe.
class ProgressLines {
 public:
  ProgressLines(int64_t log_every, int64_t steps, bool tty);
  void set_banner(std::string banner) { banner_ = std::move(banner); }
  // Step `step` of `steps`, `elapsed_s` seconds into the run: prints `line` or not.
  void step(int64_t step, int64_t steps, double elapsed_s, const std::string& line);
  // Ends a line left open on a terminal (before a stop or fault message).
  void finish();

 private:
  int64_t log_every_, every_;
  bool tty_, open_ = false;
  std::string banner_;
  double last_s_ = 0;
};

}  // namespace pw::tools
