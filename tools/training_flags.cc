#include "tools/training_flags.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#include "exec/device_ops.h"
#include "exec/machine/memory.h"
#include "exec/profile/measure_memory.h"
#include "exec/runtime/checkpoint.h"
#include "exec/runtime/device_lanes.h"
#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_memory.h"
#include "exec/runtime/run_pipeline.h"
#include "models/error.h"
#include "models/error_text.h"
#include "models/human_units.h"
#include "models/optimizer_memory.h"
#include "models/output_set.h"
#include "tools/flag_checks.h"
#include "tools/signals.h"

namespace pw::tools {

void add_training_flags(CLI::App* sub, TrainingFlags& f, const TrainingFlagHelp& help) {
  sub->add_option("--steps", f.steps, help.steps)->capture_default_str();
  sub->add_option("--lr", f.lr, "learning rate (default: adam 0.003, sgd and sgd-momentum 0.05)");
  sub->add_option("--optimizer", f.optimizer,
                  models::optimizer_names(" | ", true) + " (sgd: no momentum; sgd-momentum: 0.9)")
      ->capture_default_str();
  sub->add_option("--seed", f.seed, "seed of initialization and data")->capture_default_str();
  sub->add_option("--threads", f.threads, help.threads);
  sub->add_option("--data", f.data,
                  "text file for gpt (default /usr/share/common-licenses/GPL-3); other models: INPUTS.npy,TARGETS.npy "
                  "or CIFAR-10 batches A.bin[,B.bin...] (default: synthetic data)");
  sub->add_option("--prefetch", f.prefetch, help.prefetch)->capture_default_str();
  sub->add_flag("--json", f.json, help.json);
  sub->add_option("--checkpoint", f.checkpoint,
                  "write checkpoints into DIR (at the end, on SIGINT/SIGTERM, and every --checkpoint-every steps)");
  sub->add_option("--checkpoint-every", f.checkpoint_every, help.checkpoint_every)->capture_default_str();
  sub->add_option("--resume", f.resume, help.resume);
  sub->add_option("--log-every", f.log_every,
                  "progress line every N steps when stderr is not a terminal (default: 10%)");
}

void check_training_flags(const TrainingFlags& f, const CLI::App& sub, bool writes_checkpoints) {
  (void)models::find_cpu_trainable_optimizer(f.optimizer, "--optimizer");
  if (f.steps < 1) throw InputError("--steps: expected >= 1, got " + std::to_string(f.steps));
  if (sub.count("--lr") > 0 && !(f.lr > 0)) throw InputError("--lr: expected a value > 0");
  if (f.prefetch < 0) throw InputError("--prefetch: expected >= 0, got " + std::to_string(f.prefetch));
  if (sub.count("--threads") > 0) {
    if (f.threads < 1) throw InputError("--threads: expected >= 1, got " + std::to_string(f.threads));
    check_thread_count(f.threads, "--threads");
  }
  if (!f.checkpoint.empty() && writes_checkpoints) check_output_directory("--checkpoint", f.checkpoint);
  if (f.checkpoint_every < 0)
    throw InputError("--checkpoint-every: expected >= 0, got " + std::to_string(f.checkpoint_every));
  if (f.checkpoint_every > 0 && f.checkpoint.empty()) throw InputError("--checkpoint-every: needs --checkpoint DIR");
  if (f.log_every < 0) throw InputError("--log-every: expected >= 1");
}

exec::OptimizerOptions training_optimizer(const TrainingFlags& f) {
  const std::string& name = models::find_cpu_trainable_optimizer(f.optimizer, "--optimizer").name;
  exec::OptimizerOptions o;
  o.kind = name == "adam" ? exec::OptimizerKind::adam : exec::OptimizerKind::sgd;
  o.momentum = name == "sgd-momentum" ? 0.9 : 0.0;
  o.lr = f.lr > 0 ? f.lr : exec::default_learning_rate(o.kind);
  return o;
}

namespace {

// The most `device` can hold and the words for it, with `decimals` digits: the host's bound
// (exec::describe: the machine, a cgroup, a ulimit) or a card's total ("cuda:0's 79.2 GiB of
// memory").
struct HoldBound {
  int64_t bytes = 0;
  std::function<std::string(int decimals)> words;
};
HoldBound bound_of(exec::Device device) {
  if (device.is_cpu()) {
    const exec::MemoryBound b = exec::memory_bound();
    return {b.bytes, [b](int d) { return exec::describe(b, d); }};
  }
  const int64_t total = exec::device_total_memory_bytes(device);
  const std::string name = device.to_string();
  return {total, [name, total](int d) {
            return name + "'s " + models::gib_text(static_cast<double>(total), d) + " of memory";
          }};
}

// "<need><where>, more than <the bound>", both with the digits that tell them apart.
std::string need_beyond(double need, const std::string& where, const HoldBound& have) {
  const int d = models::gib_decimals_apart(need, static_cast<double>(have.bytes));
  return models::gib_text(need, d) + where + ", more than " + have.words(d);
}

std::string worker_span(const std::vector<int>& workers) {
  if (workers.size() == 1) return "worker " + std::to_string(workers.front());
  return "workers " + std::to_string(workers.front()) + "-" + std::to_string(workers.back());
}

}  // namespace

void check_fits_in_memory(const models::Model& model, const exec::OptimizerOptions& optimizer, int64_t micro_batch,
                          int64_t in_flight, const std::string& flags, exec::Device device) {
  const double need =
      models::estimated_training_bytes(model, exec::optimizer_memory(optimizer), micro_batch, in_flight);
  const HoldBound have = bound_of(device);
  if (have.bytes > 0 && need > static_cast<double>(have.bytes))
    throw InputError(flags + ": training " + escape_for_message(model.name()) + " needs at least " +
                     need_beyond(need, "", have));
}

namespace {

void refuse_run(const models::Model& model, int64_t need, const std::string& where, const HoldBound& have,
                const std::string& flags) {
  if (have.bytes > 0 && need > have.bytes)
    throw InputError(flags + ": running " + escape_for_message(model.name()) + " as planned needs " +
                     need_beyond(static_cast<double>(need), where, have));
}

// An MPI rank's process (training_flags.h). Its own need against every bound of this process;
// with every rank on this host, all of theirs against the host's shared bounds (the rlimits
// are per process). On a GPU, its worker's peak against the card, rank 0's checkpoint writing
// against the host.
void check_rank_fits(const models::Model& model, const planner::Plan& plan, const exec::OptimizerOptions& optimizer,
                     const planner::Schedule* schedule, const RankPlace& rank, const std::string& flags) {
  // A rank past the plan's devices: the runtime refuses the rank count itself, naming both.
  if (rank.rank >= (schedule ? schedule->num_devices : exec::schedule_for_run(plan).num_devices)) return;
  const auto need = exec::predicted_rank_memory(model, plan, optimizer, schedule, rank.rank);
  if (!need) {
    check_fits_in_memory(model, optimizer, plan.micro_batch_size, plan.num_micro_batches, flags);
    return;
  }
  const std::string who = " (rank " + std::to_string(rank.rank) + ")";
  const int64_t writing = rank.writes_checkpoints ? need->rank0_checkpoint_bytes : 0;  // on rank 0's host
  if (!rank.device.is_cpu()) {
    refuse_run(model, need->own_bytes, " on " + rank.device.to_string() + who, bound_of(rank.device), flags);
    if (rank.rank == 0) refuse_run(model, writing, who, bound_of(exec::Device::cpu()), flags);
    return;
  }
  refuse_run(model, need->own_bytes + (rank.rank == 0 ? writing : 0), who, bound_of(rank.device), flags);
  if (!rank.all_on_this_host) return;
  const exec::MemoryBound host = exec::host_memory_bound();
  refuse_run(model, need->all_bytes + writing, " (all ranks, on this host)",
             {host.bytes, [host](int d) { return exec::describe(host, d); }}, flags);
}

}  // namespace

void check_run_fits_in_memory(const models::Model& model, const planner::Plan& plan,
                              const exec::OptimizerOptions& optimizer, const planner::Schedule* schedule,
                              exec::Device device, int gpus, const RankPlace* rank, const std::string& flags) {
  if (rank) {
    check_rank_fits(model, plan, optimizer, schedule, *rank, flags);
    return;
  }
  std::vector<exec::Device> lanes;
  if (!device.is_cpu())
    lanes =
        exec::pipeline_lanes(schedule ? schedule->num_devices : exec::schedule_for_run(plan).num_devices, device, gpus);
  const auto needs = exec::predicted_run_memory(model, plan, optimizer, schedule, lanes);
  if (!needs) {
    if (device.is_cpu()) check_fits_in_memory(model, optimizer, plan.micro_batch_size, plan.num_micro_batches, flags);
    return;
  }
  for (const exec::MemoryNeed& n : *needs)
    refuse_run(model, n.bytes,
               n.where.is_cpu() ? "" : " on " + n.where.to_string() + " (" + worker_span(n.workers) + ")",
               bound_of(n.where), flags);
}

void check_compare_fits_in_memory(const models::Model& model, const planner::Plan& plan,
                                  const exec::OptimizerOptions& optimizer, int threads) {
  const int64_t need = exec::prediction_measurement_bytes(model, plan, threads, optimizer);
  const exec::MemoryBound b = exec::memory_bound();
  if (need <= 0 || b.bytes <= 0 ||
      static_cast<double>(need) <= exec::kMeasureMemoryShare * static_cast<double>(b.bytes))
    return;
  const int copies = std::max(1, plan.num_stages() / std::max(1, plan.chunks));
  char share[16];
  std::snprintf(share, sizeof share, "%.0f%%", exec::kMeasureMemoryShare * 100);
  throw InputError("--compare: measuring the prediction needs about " + models::gib_text(static_cast<double>(need)) +
                   " (" + std::to_string(copies) + " co-run cop" + (copies == 1 ? "y" : "ies") + " of " +
                   escape_for_message(model.name()) + " at micro-batch " + std::to_string(plan.micro_batch_size) +
                   "), more than " + share + " of " + exec::describe(b) + "; run without --compare");
}

std::string numerical_fault_line(const std::string& what, const std::string& checkpoint_dir) {
  const int64_t kept = checkpoint_dir.empty() ? -1 : exec::checkpoint_step(checkpoint_dir);
  return "pipewright: numerical fault: " + what +
         (kept >= 0 ? "; last good checkpoint: " + checkpoint_dir + " (step " + std::to_string(kept) + ")"
                    : std::string("; no checkpoint"));
}

void exit_numerical_fault(const std::string& what, const std::string& checkpoint_dir) {
  throw CommandExit(kExitNumericalFault, numerical_fault_line(what, checkpoint_dir));
}

void exit_stopped(int64_t done, int64_t total, const std::string& checkpoint_dir, int64_t checkpoint_step, int sig) {
  if (sig == 0) sig = StopSignals::received();
  throw CommandExit(
      exit_code_for_signal(sig),
      "pipewright: stopped by " + StopSignals::name(sig) + " after step " + std::to_string(done) + " of " +
          std::to_string(total) + "; " +
          (checkpoint_step >= 0 ? "checkpoint: " + checkpoint_dir + " (step " + std::to_string(checkpoint_step) +
                                      "; continue with --resume " + checkpoint_dir + ")"
                                : std::string("no checkpoint (--checkpoint DIR not given)")));
}

ProgressLines::ProgressLines(int64_t log_every, int64_t steps, bool tty)
    : log_every_(log_every), every_(log_every > 0 ? log_every : std::max<int64_t>(1, steps / 10)), tty_(tty) {}

void ProgressLines::step(int64_t step, int64_t steps, double elapsed_s, const std::string& line) {
  const bool final = step == steps;
  const double since = elapsed_s - last_s_;
  const bool print = tty_             ? since >= 0.1 || final
                     : log_every_ > 0 ? step % log_every_ == 0 || final
                                      : elapsed_s >= 10.0 && (step % every_ == 0 || final || since >= 10.0);
  if (!print) return;
  if (!banner_.empty()) {
    std::fputs(banner_.c_str(), stderr);
    banner_.clear();
  }
  if (tty_) std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  else std::fprintf(stderr, "%s\n", line.c_str());
  open_ = tty_ && !final;
  last_s_ = elapsed_s;
  std::fflush(stderr);
}

void ProgressLines::finish() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

}  // namespace pw::tools
