#include "tools/training_flags.h"

#include "models/error.h"
#include "models/optimizer_memory.h"
#include "models/output_set.h"
#include "tools/flag_checks.h"

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
}

void check_training_flags(const TrainingFlags& f, const CLI::App& sub) {
  (void)models::find_cpu_trainable_optimizer(f.optimizer, "--optimizer");
  if (f.steps < 1) throw InputError("--steps: expected >= 1, got " + std::to_string(f.steps));
  if (sub.count("--lr") > 0 && !(f.lr > 0)) throw InputError("--lr: expected a value > 0");
  if (f.prefetch < 0) throw InputError("--prefetch: expected >= 0, got " + std::to_string(f.prefetch));
  if (sub.count("--threads") > 0) {
    if (f.threads < 1) throw InputError("--threads: expected >= 1, got " + std::to_string(f.threads));
    check_thread_count(f.threads, "--threads");
  }
  if (!f.checkpoint.empty()) check_output_directory("--checkpoint", f.checkpoint);
  if (f.checkpoint_every < 0)
    throw InputError("--checkpoint-every: expected >= 0, got " + std::to_string(f.checkpoint_every));
  if (f.checkpoint_every > 0 && f.checkpoint.empty()) throw InputError("--checkpoint-every: needs --checkpoint DIR");
}

exec::OptimizerOptions training_optimizer(const TrainingFlags& f) {
  const std::string& name = models::find_cpu_trainable_optimizer(f.optimizer, "--optimizer").name;
  exec::OptimizerOptions o;
  o.kind = name == "adam" ? exec::OptimizerKind::adam : exec::OptimizerKind::sgd;
  o.momentum = name == "sgd-momentum" ? 0.9 : 0.0;
  o.lr = f.lr > 0 ? f.lr : exec::default_learning_rate(o.kind);
  return o;
}

}  // namespace pw::tools
