// `pipewright import pipedream GRAPH.txt [-o profile.json]`: read a PipeDream profile
// (models/pipedream_import.h), print node/edge counts and total forward/backward ms.
#include <iomanip>
#include <iostream>
#include <memory>

#include "models/error.h"
#include "models/output_set.h"
#include "models/pipedream_import.h"
#include "tools/command_registry.h"

namespace {

struct ImportArgs {
  std::string format, file, output;
  bool json = false;
};

void run(const ImportArgs& a) {
  if (a.format != "pipedream") throw pw::InputError("import: unknown format \"" + a.format + "\" (expected pipedream)");
  const pw::models::PipeDreamGraph g = pw::models::read_pipedream_graph(a.file);
  const auto& p = g.profile;
  if (a.json) {
    std::cout << pw::Json(p).dump(2) << "\n";
  } else {
    int loading = 0;
    for (const auto& l : p.layers) loading += l.is_data_loading;
    std::cout << a.file << ": model " << p.model << ", " << p.layers.size() << " nodes (" << loading
              << " data-loading), " << p.edges.size() << " edges, micro-batch " << p.micro_batch << "\n"
              << std::fixed << std::setprecision(3) << "forward " << p.total_forward_ns() / 1e6 << " ms, backward "
              << p.total_backward_ns() / 1e6 << " ms, parameters " << p.total_parameter_bytes() << " bytes"
              << (g.has_stage_ids ? ", has stage ids" : "") << "\n";
  }
  if (!a.output.empty()) pw::models::save_profile_file(a.output, p);
}

pw::tools::CommandRegistrar register_import("import", [](CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  auto* sub = app.add_subcommand("import", "Import a profile from another tool (PipeDream graph.txt)");
  sub->add_option("format", a->format, "pipedream")->required();
  sub->add_option("file", a->file, "the graph.txt file")->required();
  sub->add_flag("--json", a->json, "print the profile JSON instead of a summary");
  sub->add_option("-o,--output", a->output, "write the profile (pipewright.profile/1) to this file");
  sub->callback([a] { pw::run_with_output("-o", a->output, [&] { run(*a); }); });
});

}  // namespace
