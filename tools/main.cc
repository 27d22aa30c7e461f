// pipewright: plan, simulate and run pipeline-parallel training.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

#include "models/error.h"
#include "tools/command_registry.h"

namespace pw::tools {
std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}
}  // namespace pw::tools

// OpenMP threads that spin while waiting collapse throughput when the machine is shared (another
// pipeline worker, a build, a second test): measured 6x slower for a GPT block with 2 threads
// and one busy core (bench/RESULTS.md). libgomp reads OMP_WAIT_POLICY in a load-time
// constructor, so setting it here is too late for this process: re-execute once with the
// variable set, unless the user chose a policy.
static void default_to_passive_omp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  ::setenv("OMP_WAIT_POLICY", "passive", 1);
  ::execv("/proc/self/exe", argv);  // returns only on failure: then run on with the default
}

int main(int argc, char** argv) {
  default_to_passive_omp_wait(argv);
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
