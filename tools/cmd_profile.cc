// `pipewright profile --model M --device D --micro-batch B [...]`: a per-layer Profile of a model
// for one micro-batch on one device, printed as a table (or JSON) and optionally saved.
// The profile is analytic (models/cost: roofline on a catalog device) or, with --measure,
// measured on this machine by the oneDNN executor (exec/profiler); make_profile() picks.
#include <iostream>
#include <memory>

#include "models/cost.h"
#include "models/error.h"
#include "models/optimizer_memory.h"
#include "models/profile.h"
#include "tools/command_registry.h"
#include "tools/model_report.h"

#ifdef PW_HAVE_EXEC
#include <unistd.h>

#include <cstdio>

#include "exec/profiler.h"
#endif

namespace {

struct ProfileArgs {
  std::string model;
  std::string device;
  int64_t micro_batch = 0;
  double efficiency = 0.5;
  std::string optimizer = "adam";
  bool bf16 = false;
  bool json = false;
  std::string output;
  bool measure = false;  // run the layers with the oneDNN executor (exec/profiler)
  int reps = 10;
  int warmup = 2;
  int threads = 0;
  bool cpu_clock = false;
};

void check_args(const ProfileArgs& a) {
  if (a.micro_batch < 1)
    throw pw::InputError("--micro-batch: expected an integer >= 1, got " + std::to_string(a.micro_batch));
  if (!(a.efficiency > 0 && a.efficiency <= 1))
    throw pw::InputError("--efficiency: expected a number in (0, 1], got " + std::to_string(a.efficiency));
  try {
    pw::models::find_optimizer(a.optimizer);
  } catch (const pw::InputError& e) {
    throw pw::InputError(std::string("--optimizer: ") + e.what());
  }
}

pw::models::Profile analytic(const ProfileArgs& a, const pw::models::Model& model) {
  if (a.device.empty()) throw pw::InputError("--device: required unless --measure is given");
  const pw::models::DeviceSpec device = pw::tools::resolve_device(a.device, "--device");
  return pw::models::analytic_profile(model, device, a.micro_batch, {a.efficiency, a.bf16, a.optimizer});
}

pw::models::Profile make_profile(const ProfileArgs& a) {
  check_args(a);
  pw::tools::ModelSource src = pw::tools::resolve_model(a.model, pw::models::ZooOptions{}, "--model");
#ifdef PW_HAVE_EXEC
  if (a.measure) {
    if (!a.device.empty())
      throw pw::InputError("--device: a measured profile runs on this machine; drop --device or --measure");
    pw::exec::MeasureOptions o;
    o.micro_batch = a.micro_batch;
    o.reps = a.reps;
    o.warmup = a.warmup;
    o.threads = a.threads;
    o.optimizer = a.optimizer;
    o.thread_cpu_time = a.cpu_clock;
    if (a.cpu_clock && a.threads != 1) throw pw::InputError("--cpu-clock: needs --threads 1");
    if (a.threads < 0) throw pw::InputError("--threads: expected >= 1");
    const bool tty = isatty(fileno(stderr)) != 0;
    o.progress = [tty](int done, int total, const std::string& name) {
      if (tty)
        std::fprintf(stderr, "\r\033[Kmeasuring layer %d/%d (%s)%s", done, total, name.c_str(), done == total ? "\n" : "");
      else if (done == total || done % std::max(1, total / 10) == 0)
        std::fprintf(stderr, "measured %d/%d layers\n", done, total);
      std::fflush(stderr);
    };
    return pw::exec::measure_profile(src.model, o);
  }
#else
  if (a.measure) throw pw::InputError("--measure: this pipewright was built without the executor (oneDNN)");
#endif
  return analytic(a, src.model);
}

void run(const ProfileArgs& a) {
  const pw::models::Profile p = make_profile(a);
  if (a.json)
    std::cout << pw::Json(p).dump(2) << "\n";
  else
    pw::tools::print_profile(std::cout, p);
  if (!a.output.empty()) pw::models::save_profile_file(a.output, p);
}

pw::tools::CommandRegistrar reg("profile", [](CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  auto* sub = app.add_subcommand("profile", "Per-layer time and memory of a model on a device (analytic) or measured here (--measure)");
  sub->add_option("--model", a->model, "a model JSON file, or gpt | mlp | vgg16 | resnet50 | default")->required();
  sub->add_option("--device", a->device,
                  "a catalog device (a100-80g, cpu-core-avx2, ...) or a device JSON file (required unless --measure)");
  sub->add_flag("--measure", a->measure, "measure each layer's F, B, W on this CPU (oneDNN executor) instead");
  sub->add_option("--reps", a->reps, "--measure: timed repetitions per layer (median reported)")->capture_default_str();
  sub->add_option("--warmup", a->warmup, "--measure: untimed repetitions first")->capture_default_str();
  sub->add_option("--threads", a->threads, "--measure: OpenMP threads (default: all)");
  sub->add_flag("--cpu-clock", a->cpu_clock,
                "--measure: time on the thread's CPU clock (needs --threads 1; robust on a busy machine)");
  sub->add_option("--micro-batch", a->micro_batch, "samples per micro-batch")->required();
  sub->add_option("--efficiency", a->efficiency, "fraction of peak FLOP/s reached, in (0, 1]")->capture_default_str();
  sub->add_option("--optimizer", a->optimizer, "sgd | sgd-momentum | rmsprop | adam | adam-mixed")
      ->capture_default_str();
  sub->add_flag("--bf16", a->bf16, "16-bit compute peak and 2-byte activations");
  sub->add_flag("--json", a->json, "print the profile (pipewright.profile/1) instead of a table");
  sub->add_option("-o,--output", a->output, "write the profile (pipewright.profile/1) to this file");
  sub->callback([a] { run(*a); });
});

}  // namespace
