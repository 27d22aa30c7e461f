// `pipewright profile --model M --device D --micro-batch B [...]`: a per-layer Profile of a model
// for one micro-batch on one device, printed as a table (or JSON) and optionally saved.
// The profile is analytic (models/cost: roofline on a catalog device) or, with --measure,
// measured on this machine by the oneDNN executor (exec/profiler); make_profile() picks.
// --measure --device cuda[:N] measures on that GPU instead (CUDA events around each op, in
// context; exec/profile/profiler.h: MeasureOptions::device); the file is the same format.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "models/cost.h"
#include "models/defaults.h"
#include "models/error.h"
#include "models/optimizer_memory.h"
#include "models/output_set.h"
#include "models/profile.h"
#include "tools/command_registry.h"
#include "tools/flag_checks.h"
#include "tools/model_report.h"
#include "tools/zoo_flags.h"

#ifdef PW_HAVE_EXEC
#include <unistd.h>

#include <cstdio>

#include "exec/profile/profiler.h"
#include "exec/runtime/device_lanes.h"
#endif

namespace {

struct ProfileArgs {
  std::string model;
  std::string device;
  std::string micro_batch_list;  // "4" or "1,2,4,8" (--measure: one point per size)
  std::string thread_list;       // "" or "1,2" (--measure)
  int64_t micro_batch = 0;       // the first of micro_batch_list
  std::vector<int64_t> micro_batches;
  std::vector<int> thread_counts;
  int co_run = 0;
  bool isolated = false;
  double efficiency = pw::models::kDefaultEfficiency;
  std::string optimizer = pw::models::kDefaultOptimizer;
  std::string dtype;  // "" = models::default_dtype of the device
  bool bf16 = false;
  pw::models::ZooOptions zoo;  // sizing flags of a zoo --model
  bool json = false;
  std::string output;
  bool measure = false;  // run the layers with the oneDNN executor (exec/profiler)
  int reps = 10;
  int warmup = 2;
  int threads = 0;
  bool cpu_clock = false;
};

template <class T>
std::vector<T> parse_positive_list(const std::string& s, const std::string& flag) {
  std::vector<T> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    const std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (!item.empty() && *end == '\0' && v < 1) throw pw::InputError(flag + ": expected an integer >= 1, got " + item);
    if (item.empty() || *end != '\0')
      throw pw::InputError(flag + ": expected a positive integer or a comma-separated list of them, got \"" + s + "\"");
    out.push_back(static_cast<T>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

void check_args(ProfileArgs& a) {
  a.micro_batches = parse_positive_list<int64_t>(a.micro_batch_list, "--micro-batch");
  a.micro_batch = a.micro_batches.front();
  if (a.micro_batches.size() > 1 && !a.measure)
    throw pw::InputError("--micro-batch: several sizes need --measure (an analytic profile scales exactly)");
  if (!a.thread_list.empty()) {
    if (!a.measure) throw pw::InputError("--threads: needs --measure");
    a.thread_counts = parse_positive_list<int>(a.thread_list, "--threads");
    a.threads = a.thread_counts.front();
  }
  if (a.micro_batch < 1)
    throw pw::InputError("--micro-batch: expected an integer >= 1, got " + std::to_string(a.micro_batch));
  if (!(a.efficiency >= 0 && a.efficiency <= 1))
    throw pw::InputError("--efficiency: expected a number in [0, 1], got " + std::to_string(a.efficiency));
  try {
    pw::models::find_optimizer(a.optimizer);
  } catch (const pw::InputError& e) { throw pw::InputError(std::string("--optimizer: ") + e.what()); }
}

pw::models::Profile analytic(const ProfileArgs& a, const pw::models::Model& model) {
  if (a.device.empty()) throw pw::InputError("--device: required unless --measure is given");
  const pw::models::DeviceSpec device = pw::tools::resolve_device(a.device, "--device");
  const bool bf16 = pw::models::resolve_bf16(a.bf16, a.dtype, device);
  return pw::models::analytic_profile(model, device, a.micro_batch,
                                      {a.efficiency, bf16, pw::models::priced_optimizer(a.optimizer, bf16)});
}

pw::models::Profile make_profile(ProfileArgs& a, const CLI::App& sub) {
  check_args(a);
  if (const char* flag = pw::tools::first_size_flag_given(sub);
      flag != nullptr && (!pw::tools::is_zoo_name(a.model) || a.model == "default"))
    throw pw::InputError(std::string(flag) + ": sizing options apply to a zoo family, not to \"" + a.model + "\"");
  if (pw::tools::is_zoo_name(a.model) && a.model != "default") pw::tools::check_size_flags_for_family(a.model, sub);
  pw::tools::ModelSource src = pw::tools::resolve_model(a.model, a.zoo, "--model");
#ifdef PW_HAVE_EXEC
  if (a.measure) {
    pw::exec::Device on = pw::exec::Device::cpu();
    if (!a.device.empty()) {
      if (a.device != "cpu" && a.device != "cuda" && a.device.rfind("cuda:", 0) != 0)
        throw pw::InputError(
            "--device: a measured profile runs on this machine (--device cpu, the default, or cuda[:N]); drop "
            "--device or --measure");
      on = pw::exec::parse_device_flag(a.device, "--device");
      pw::exec::check_device_usable(on, "--device");
    }
    if (a.bf16 || (!a.dtype.empty() && a.dtype != "fp32"))
      throw pw::InputError("--measure: this machine's executor computes in fp32; drop --bf16/--dtype");
    pw::exec::MeasureOptions o;
    o.micro_batch = a.micro_batch;
    o.reps = a.reps;
    o.warmup = a.warmup;
    o.threads = a.threads;
    o.optimizer = a.optimizer;
    o.thread_cpu_time = a.cpu_clock;
    o.micro_batches = a.micro_batches;
    o.thread_counts = a.thread_counts;
    o.in_context = !a.isolated;
    o.co_run_workers = a.co_run;
    o.device = on;
    if (a.co_run < 0) throw pw::InputError("--co-run: expected >= 1 copies (0: one per --threads cores)");
    if (a.cpu_clock && a.threads != 1) throw pw::InputError("--cpu-clock: needs --threads 1");
    if (a.threads < 0) throw pw::InputError("--threads: expected >= 1");
    const bool tty = isatty(fileno(stderr)) != 0;
    o.progress = [tty](int done, int total, const std::string& name) {
      if (tty)
        std::fprintf(stderr, "\r\033[Kmeasured %d/%d (%s)%s", done, total, name.c_str(), done == total ? "\n" : "");
      else if (done == total || done % std::max(1, total / 10) == 0)
        std::fprintf(stderr, "measured %d/%d (%s)\n", done, total, name.c_str());
      std::fflush(stderr);
    };
    return pw::exec::measure_profile(src.model, o);
  }
#else
  if (a.measure) throw pw::InputError("--measure: this pipewright was built without the executor (oneDNN)");
#endif
  return analytic(a, src.model);
}

void run(ProfileArgs a, const CLI::App& sub) {
  const pw::models::Profile p = make_profile(a, sub);
  if (a.json) std::cout << pw::Json(p).dump(2) << "\n";
  else pw::tools::print_profile(std::cout, p);
  if (!a.output.empty()) pw::models::save_profile_file(a.output, p);
}

pw::tools::CommandRegistrar register_profile("profile", [](CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  auto* sub = app.add_subcommand(
      "profile", "Per-layer time and memory of a model on a device (analytic) or measured here (--measure)");
  sub->add_option("--model", a->model, "a model JSON file, or gpt | mlp | vgg16 | resnet50 | default")->required();
  sub->add_option("--device", a->device,
                  "a catalog device (a100-80g, cpu-core-avx2, ...) or a device JSON file (required unless --measure); "
                  "with --measure: cuda | cuda:N measures on that GPU");
  sub->add_flag("--measure", a->measure, "measure each layer's F, B, W on this CPU (oneDNN executor) instead");
  sub->add_option("--reps", a->reps, "--measure: timed repetitions per layer (median reported)")->capture_default_str();
  sub->add_option("--warmup", a->warmup, "--measure: untimed repetitions first")->capture_default_str();
  sub->add_option("--threads", a->thread_list,
                  "--measure: OpenMP threads per copy, or a list (1,2: costs per thread count; default: all)");
  sub->add_option("--co-run", a->co_run,
                  "--measure: copies measured at once, each on its own cores (default: one per --threads cores)");
  sub->add_flag("--isolated", a->isolated,
                "--measure: time each layer alone in a loop (the old profiler) instead of inside training passes");
  sub->add_flag("--cpu-clock", a->cpu_clock,
                "--measure: time on the thread's CPU clock (needs --threads 1; robust on a busy machine)");
  sub->add_option("--micro-batch", a->micro_batch_list,
                  "samples per micro-batch; --measure: a list (1,2,4,8) measures costs at each size")
      ->required();
  sub->add_option("--efficiency", a->efficiency, pw::tools::kEfficiencyHelp)->capture_default_str();
  sub->add_option("--optimizer", a->optimizer,
                  "sgd | sgd-momentum | rmsprop | adam | adam-mixed (under bf16, adam is priced as adam-mixed)")
      ->capture_default_str();
  sub->add_option("--dtype", a->dtype, "fp32 | bf16 analytic costs (default: bf16 on an accelerator, fp32 on a CPU)");
  sub->add_flag("--bf16", a->bf16, "same as --dtype bf16: 16-bit compute peak and 2-byte activations");
  pw::tools::add_zoo_size_options(sub, a->zoo, pw::models::ZooOptions{});
  sub->add_flag("--json", a->json, "print the profile (pipewright.profile/1) instead of a table");
  sub->add_option("-o,--output", a->output, "write the profile (pipewright.profile/1) to this file");
  sub->callback([a, sub] { pw::run_with_output("-o", a->output, [&] { run(*a, *sub); }); });
});

}  // namespace
