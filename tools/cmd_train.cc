// `pipewright train --model M [sizes] [--steps N] [--batch B] [--micro-batch U] [--lr X]
//  [--optimizer sgd|sgd-momentum|adam] [--weight-decay W] [--data FILE] [--seed S] [--threads T] [--json]
//  [--checkpoint DIR [--checkpoint-every K]] [--resume DIR] [--log-every N] [--device cpu|cuda[:N]] [--tf32]`:
// single-device training with the oneDNN executor, or with --device cuda[:N] on one GPU (the
// CUDA backend, exec/cuda/: same flags, outputs and JSON). --tf32 (only with a CUDA device,
// else one line and exit 2) opts into TF32 tensor-core matrix products (fp32 otherwise); the
// JSON records it as "tf32". Where this build has no CUDA backend
// or no GPU can be used, that is one line and exit 2 before anything else runs; so is a model
// with a layer kind the backend does not run yet (naming the layer), before the first step.
// Zoo families get small defaults that train
// in seconds on 2 cores; sizing flags override them. Progress goes to stderr (rewritten in place
// on a terminal; otherwise a line every ~10% of the steps or 10 s once the run has lasted 10 s,
// or every --log-every N steps); the summary to stdout. SIGINT / SIGTERM finish the step,
// checkpoint (with --checkpoint), print the summary of the steps done and exit 130 / 143; a NaN
// or Inf exits 4 (tools/signals.h). --prefetch N: mini-batches drawn ahead in the background
// (exec/data/loader.h). The summary gives the end-to-end samples/s (data included) and the
// median step time without data waits, with a note when waiting for data took more than 10% of
// the wall time (exec/data/loader.h: data_loading_bound).
#ifdef PW_HAVE_EXEC
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>

#include "exec/data/data.h"
#include "exec/data/loader.h"
#include "exec/device_ops.h"
#include "exec/layer.h"
#include "exec/numerics.h"
#include "exec/optimizer.h"
#include "exec/parallel.h"
#include "exec/runtime/device_lanes.h"
#include "exec/runtime/trainer.h"
#include "models/defaults.h"
#include "models/error.h"
#include "models/optimizer_memory.h"
#include "models/output_set.h"
#include "tools/command_registry.h"
#include "tools/flag_checks.h"
#include "tools/model_report.h"
#include "tools/signals.h"
#include "tools/training_flags.h"
#include "tools/zoo_flags.h"

namespace {

struct TrainArgs {
  std::string model;
  pw::models::ZooOptions zoo;
  pw::tools::TrainingFlags t = [] {
    pw::tools::TrainingFlags f;
    f.steps = 100;
    return f;
  }();
  int64_t batch = 0;
  int64_t micro_batch = 0;
  double weight_decay = 0;
  std::string device = "cpu";
  bool tf32 = false;
};

std::string fmt_time(double s) {
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", int(s / 3600), int(s / 60) % 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

// The model (with the small zoo sizes unless given) and the training options, every flag
// checked before anything is allocated or printed.
std::pair<pw::tools::ModelSource, pw::exec::TrainOptions> prepare(const TrainArgs& a, const CLI::App& sub) {
  const pw::exec::Device device = pw::exec::parse_device_flag(a.device, "--device");
  if (a.tf32 && device.is_cpu())
    throw pw::InputError("--tf32: TF32 matrix products need --device cuda[:N] (the host computes in fp32)");
  pw::exec::check_device_usable(device, "--device");
  pw::tools::check_training_flags(a.t, sub);
  const bool zoo = pw::tools::is_zoo_name(a.model) && a.model != "default";
  if (const char* flag = pw::tools::first_size_flag_given(sub); !zoo && flag != nullptr)
    throw pw::InputError(std::string(flag) + ": sizing options apply to a zoo family (gpt, mlp, vgg16), not to \"" +
                         a.model + "\"");
  if (sub.count("--batch") > 0 && a.batch < 1)
    throw pw::InputError("--batch: expected >= 1, got " + std::to_string(a.batch));
  pw::models::ZooOptions z = a.zoo;
  if (zoo) {
    pw::tools::check_size_flags_for_family(a.model, sub);
    z = pw::tools::with_unset_sizes_from(z, pw::tools::small_zoo_options(), sub);
    z.batch = sub.count("--batch") > 0 ? a.batch : pw::tools::small_zoo_batch(a.model);
  }
  pw::tools::ModelSource src = pw::tools::resolve_model(a.model, z, "--model");
  pw::exec::TrainOptions o;
  o.steps = a.t.steps;
  o.batch = sub.count("--batch") > 0 ? a.batch : src.model.batch();
  o.micro_batch = a.micro_batch;
  o.optimizer = pw::tools::training_optimizer(a.t);
  o.optimizer.weight_decay = a.weight_decay;
  o.device = device;
  o.data_file = a.t.data;
  o.seed = a.t.seed;
  o.prefetch = a.t.prefetch;
  if (sub.count("--threads") > 0) pw::exec::set_num_threads(a.t.threads);

  pw::tools::check_fits_in_memory(src.model, o.optimizer, o.micro_batch > 0 ? o.micro_batch : o.batch, 1,
                                  sub.count("--batch") > 0 ? "--batch" : "the model's sizes", device);
  (void)pw::exec::make_data_source(src.model, o.data_file, o.seed, "--data");
  o.checkpoint_dir = a.t.checkpoint;
  o.checkpoint_every = a.t.checkpoint_every;
  o.resume_dir = a.t.resume;
  if (!device.is_cpu()) pw::exec::set_tf32(device, a.tf32);
  return {std::move(src), std::move(o)};
}

// The step's progress line (tools/training_flags.h: ProgressLines decides which go out).
std::function<void(const pw::exec::StepProgress&)> progress_printer(pw::tools::ProgressLines& lines) {
  return [&lines](const pw::exec::StepProgress& p) {
    char line[160];
    std::snprintf(line, sizeof line, "step %lld/%lld  loss %.4f  %.1f samples/s  ETA %s",
                  static_cast<long long>(p.step), static_cast<long long>(p.steps), p.loss, p.samples_per_s,
                  fmt_time(p.eta_s).c_str());
    lines.step(p.step, p.steps, p.elapsed_s, line);
  };
}

void print_json(const TrainArgs& a, const pw::tools::ModelSource& src, const pw::exec::TrainOptions& o,
                const pw::exec::TrainResult& r) {
  pw::Json j = pw::exec::TrainRecord{src.model.name(), a.t.optimizer, pw::exec::max_threads(), o, r};
  j["tf32"] = a.tf32;
  // The memory model's peak for this run (one micro-batch in flight), beside the measured one.
  j["predicted_peak_memory_bytes"] = pw::models::estimated_training_bytes(
      src.model, pw::exec::optimizer_memory(o.optimizer), o.micro_batch > 0 ? o.micro_batch : o.batch, 1);
  std::cout << j.dump(2) << "\n";
}

void print_text(const pw::tools::ModelSource& src, const pw::exec::TrainOptions& o, const pw::exec::TrainResult& r) {
  std::printf("model %s, %lld steps of batch %lld on %s\n", src.model.name().c_str(), static_cast<long long>(o.steps),
              static_cast<long long>(o.batch), r.data.c_str());
  std::printf("loss %.4f -> %.4f (%.1f%% lower)\n", r.losses.front(), r.losses.back(),
              100.0 * (1.0 - r.losses.back() / r.losses.front()));
  std::printf("%.1f samples/s end to end, %s, peak memory %s (parameters %s, optimizer state %s)\n", r.samples_per_s,
              fmt_time(r.seconds).c_str(), pw::tools::human_bytes(double(r.peak_memory_bytes)).c_str(),
              pw::tools::human_bytes(double(r.parameter_bytes)).c_str(),
              pw::tools::human_bytes(double(r.optimizer_bytes)).c_str());
  std::printf("step %.2f ms (median, data waits excluded), %.1f samples/s; waited %.2f s for data\n", r.step_ms,
              r.step_samples_per_s, r.data_wait_s);
}

void run(const TrainArgs& a, const CLI::App& sub) {
  auto [src, o] = prepare(a, sub);
  pw::tools::StopSignals signals;
  o.stop_requested = [] { return pw::tools::StopSignals::stop_requested(); };
  pw::tools::ProgressLines lines(a.t.log_every, o.steps, isatty(fileno(stderr)) != 0);
  pw::exec::TrainResult r;
  try {
    r = pw::exec::train(src.model, o, progress_printer(lines));
  } catch (const pw::exec::NumericalFault& e) {
    lines.finish();
    pw::tools::exit_numerical_fault(e.what(), a.t.checkpoint);
  }
  lines.finish();
  if (r.data_bound)
    std::fprintf(stderr,
                 "note: data loading is the bottleneck: the steps waited %.2f s of %.2f s for data (--prefetch %d)\n",
                 r.data_wait_s, r.seconds, a.t.prefetch);
  if (a.t.json) print_json(a, src, o, r);
  else print_text(src, o, r);
  std::cout.flush();
  std::fflush(stdout);
  if (r.stopped)
    pw::tools::exit_stopped(r.first_step + static_cast<int64_t>(r.losses.size()), o.steps, a.t.checkpoint,
                            r.checkpoint_step);
}

pw::tools::CommandRegistrar register_train("train", [](CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto* sub = app.add_subcommand("train", "Train a model on this machine (oneDNN executor or one GPU, one device)");
  sub->add_option("--model", a->model, "gpt | mlp | vgg16 | default | a model JSON file")->required();
  pw::tools::add_zoo_size_options(sub, a->zoo, pw::tools::small_zoo_options());
  sub->add_option("--batch", a->batch, "samples per step (default: gpt 16, mlp 32, vgg16 8, a file: its batch)");
  sub->add_option("--micro-batch", a->micro_batch, "samples per forward/backward (gradient accumulation); 0 = batch")
      ->capture_default_str();
  sub->add_option("--weight-decay", a->weight_decay, "weight decay (adam: decoupled)")->capture_default_str();
  pw::tools::add_training_flags(sub, a->t,
                                {"optimizer steps", "OpenMP threads (default: all)",
                                 "mini-batches drawn ahead in the background (0: draw in the step)",
                                 "print a JSON summary (losses, samples_per_s, peak_memory_bytes, ...)",
                                 "steps between checkpoints (0: only at the end)",
                                 "continue from the checkpoint in DIR (same model, layout and options)"});
  sub->add_option("--device", a->device, "where to train: cpu | cuda | cuda:N (the CUDA backend)")
      ->capture_default_str();
  sub->add_flag("--tf32", a->tf32, "TF32 tensor-core matrix products on the CUDA device (default: full fp32)");
  sub->callback([a, sub] { run(*a, *sub); });
});

}  // namespace
#endif  // PW_HAVE_EXEC
