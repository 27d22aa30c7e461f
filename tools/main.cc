// pipewright: plan, simulate and run pipeline-parallel training.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "models/error.h"
#include "tools/command_registry.h"
#include "tools/signals.h"

namespace pw::tools {
std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}
}  // namespace pw::tools

int main(int argc, char** argv) {
  CLI::App app{"pipewright: plans, simulates and runs pipeline-parallel training of deep networks",
               "pipewright"};
  app.set_version_flag("--version", std::string("pipewright ") + PW_VERSION);
  app.require_subcommand(1);
  auto& registry = pw::tools::command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& entry : registry) entry.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "pipewright: error: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const pw::tools::CommandExit& e) {
    if (*e.what() != '\0') std::cerr << e.what() << "\n";
    return e.code();
  } catch (const pw::InputError& e) {
    std::cerr << "pipewright: error: " << e.what() << "\n";
    return 2;
  } catch (const pw::Infeasible& e) {
    std::cerr << "pipewright: infeasible: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "pipewright: internal error: " << e.what() << "\n";
    return 70;
  }
  return 0;
}
