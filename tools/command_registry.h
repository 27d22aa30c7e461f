// Subcommand registry of the `pipewright` CLI. Each tools/cmd_*.cc defines one subcommand and
// registers it with a file-scope CommandRegistrar; main() adds them all to the CLI11 app in
// name order. Sources of tools/ are compiled into the executable directly (not a static
// library), so these registrars are never dropped by the linker.
//
// Exit codes (main.cc): 0 success; 2 bad input (pw::InputError, CLI parse errors);
// 3 infeasible (pw::Infeasible); 4 numerical fault (train, run); 70 internal error; 130 / 143
// a run stopped by SIGINT / SIGTERM (tools/signals.h: CommandExit carries these).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace pw::tools {

using CommandSetup = std::function<void(CLI::App& app)>;

struct CommandEntry {
  std::string name;
  CommandSetup setup;  // adds the subcommand (with its callback) to the app
};

std::vector<CommandEntry>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, CommandSetup setup) {
    command_registry().push_back({std::move(name), std::move(setup)});
  }
};

}  // namespace pw::tools
