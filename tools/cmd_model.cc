// `pipewright model FAMILY|MODEL.json [sizes] [--json] [-o model.json]`: builds a zoo model (or
// reads a model file) and describes it: layers, parameters, FLOPs per sample.
#include <iostream>
#include <memory>

#include "models/error.h"
#include "models/layer_graph.h"
#include "models/output_set.h"
#include "tools/command_registry.h"
#include "tools/model_report.h"
#include "tools/zoo_flags.h"

namespace {

struct ModelArgs {
  std::string spec;
  pw::models::ZooOptions zoo;
  bool json = false;
  std::string output;
};

void run(const ModelArgs& a, const CLI::App& sub) {
  if (!pw::tools::is_zoo_name(a.spec) || a.spec == "default") {
    const char* flag = pw::tools::first_size_flag_given(sub);
    if (flag == nullptr && sub.count("--batch") > 0) flag = "--batch";
    if (flag != nullptr)
      throw pw::InputError(std::string(flag) +
                           ": sizing options apply to a zoo family (gpt, mlp, vgg16, "
                           "resnet50), not to \"" +
                           a.spec + "\"");
  }
  if (pw::tools::is_zoo_name(a.spec) && a.spec != "default") pw::tools::check_size_flags_for_family(a.spec, sub);
  pw::tools::ModelSource src = pw::tools::resolve_model(a.spec, a.zoo, "MODEL");
  // Everything the summary needs is computed before any output, so bad input prints nothing.
  pw::Json summary = pw::tools::model_summary_json(src);
  if (a.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    pw::tools::print_model_summary(std::cout, src);
    std::cout << "\n";
    pw::tools::print_model_layers(std::cout, src.model);
  }
  if (!a.output.empty()) pw::models::save_model_file(a.output, src.model);
}

pw::tools::CommandRegistrar register_model("model", [](CLI::App& app) {
  auto args = std::make_shared<ModelArgs>();
  auto* sub = app.add_subcommand("model", "Build a zoo model (or read a model file) and describe it");
  sub->add_option("MODEL", args->spec, "gpt | mlp | vgg16 | resnet50 | default | a model JSON file")->required();
  pw::models::ZooOptions& z = args->zoo;
  pw::tools::add_zoo_size_options(sub, z, pw::models::ZooOptions{});
  sub->add_option("--batch", z.batch, "samples per mini-batch")->capture_default_str();
  sub->add_flag("--json", args->json, "print the summary as JSON");
  sub->add_option("-o,--output", args->output, "write the model (pipewright.model/1) to this file");
  sub->callback([args, sub] { pw::run_with_output("-o", args->output, [&] { run(*args, *sub); }); });
});

}  // namespace
