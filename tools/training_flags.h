// The flags `run` (a pipeline) and `train` (one process) share: --steps --lr --optimizer --seed
// --threads --data --prefetch --json --checkpoint --checkpoint-every --resume, declared and
// checked here once. Where the two commands mean a flag slightly differently (threads per
// worker or per process, warm-up steps counted by checkpoints), each gives its own help text
// through TrainingFlagHelp; the checks and defaults other than --steps are the same.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "exec/data/loader.h"
#include "exec/optimizer.h"
#include "models/defaults.h"

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
// --threads in [1, 4 x cores] when given, --checkpoint a directory that can be written,
// --checkpoint-every >= 0 and only with --checkpoint. Throws InputError naming the flag.
void check_training_flags(const TrainingFlags& f, const CLI::App& sub);

// The optimizer the flags ask for (--optimizer, --lr or its default), by the one vocabulary of
// models/optimizer_memory.h: sgd (momentum 0), sgd-momentum (0.9), adam. Throws InputError naming
// --optimizer for a name the executor cannot train (rmsprop, adam-mixed) or does not know.
exec::OptimizerOptions training_optimizer(const TrainingFlags& f);

}  // namespace pw::tools
