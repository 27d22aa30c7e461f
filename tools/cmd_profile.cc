// `pipewright profile --model M --device D --micro-batch B [...]`: a per-layer Profile of a model
// for one micro-batch on one device, printed as a table (or JSON) and optionally saved.
// Today the profile is analytic (models/cost); a measured profile (exec/profiler) plugs in as a
// second producer in make_profile().
#include <iostream>
#include <memory>

#include "models/cost.h"
#include "models/error.h"
#include "models/optimizer_memory.h"
#include "models/profile.h"
#include "tools/command_registry.h"
#include "tools/model_report.h"

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
  const pw::models::DeviceSpec device = pw::tools::resolve_device(a.device, "--device");
  return pw::models::analytic_profile(model, device, a.micro_batch, {a.efficiency, a.bf16, a.optimizer});
}

pw::models::Profile make_profile(const ProfileArgs& a) {
  check_args(a);
  pw::tools::ModelSource src = pw::tools::resolve_model(a.model, pw::models::ZooOptions{}, "--model");
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
  auto* sub = app.add_subcommand("profile", "Per-layer time and memory of a model on a device (analytic)");
  sub->add_option("--model", a->model, "a model JSON file, or gpt | mlp | vgg16 | resnet50 | default")->required();
  sub->add_option("--device", a->device, "a catalog device (a100-80g, cpu-core-avx2, ...) or a device JSON file")
      ->required();
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
