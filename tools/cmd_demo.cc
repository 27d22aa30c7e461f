// `pipewright demo`: the main job on the built-in default model (models::default_model()):
// describe it, then print its analytic profile on a device. Later issues extend this with plan,
// simulate and run.
#include <iostream>
#include <memory>

#include "models/cost.h"
#include "models/error.h"
#include "tools/command_registry.h"
#include "tools/model_report.h"

namespace {

struct DemoArgs {
  std::string device = "cpu-core-avx2";
  int64_t micro_batch = 4;
};

void run(const DemoArgs& a) {
  if (a.micro_batch < 1)
    throw pw::InputError("--micro-batch: expected an integer >= 1, got " + std::to_string(a.micro_batch));
  pw::tools::ModelSource src = pw::tools::resolve_model("default", {}, "model");
  const pw::models::DeviceSpec device = pw::tools::resolve_device(a.device, "--device");
  const pw::models::Profile profile = pw::models::analytic_profile(src.model, device, a.micro_batch);

  std::cout << "== The default model (built in: a byte-level GPT) ==\n";
  pw::tools::print_model_summary(std::cout, src);
  std::cout << "\n";
  pw::tools::print_model_layers(std::cout, src.model);
  std::cout << "\n== Analytic profile (roofline at 50% of peak, Adam) ==\n";
  pw::tools::print_profile(std::cout, profile);
}

pw::tools::CommandRegistrar reg("demo", [](CLI::App& app) {
  auto a = std::make_shared<DemoArgs>();
  auto* sub = app.add_subcommand("demo", "The main job on the built-in default model");
  sub->add_option("--device", a->device, "catalog device to profile on")->capture_default_str();
  sub->add_option("--micro-batch", a->micro_batch, "samples per micro-batch")->capture_default_str();
  sub->callback([a] { run(*a); });
});

}  // namespace
