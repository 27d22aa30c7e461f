// pipewright: plan, simulate and run pipeline-parallel training.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "models/error_text.h"
#include "tools/command_registry.h"
#include "tools/exit_status.h"
#include "tools/flag_checks.h"
#include "tools/notes.h"
#include "tools/signals.h"
#include "tools/suggest.h"
#ifdef PW_HAVE_EXEC
#include <unistd.h>

#include <cstring>

#include "exec/machine/cgroup_guard.h"
#include "exec/machine/machine_load.h"
#include "exec/machine/memory_crash.h"

namespace {
// The commands that compute with OpenMP threads or measure this machine: train, run, demo,
// profile, calibrate, plan --measure (it profiles and trial-runs plans: with libgomp's own spin count it
// measured the 2-thread points 10-16% faster than `run` then ran them) and
// cluster --here (its hand-off latency depends on the transport spin the choice implies,
// exec/machine_load.h: transport_spin).
bool computes(int argc, char** argv) {
  if (argc < 2) return false;
  for (const char* c : {"train", "run", "demo", "profile", "calibrate"})
    if (std::strcmp(argv[1], c) == 0) return true;
  const char* measuring_flag = std::strcmp(argv[1], "plan") == 0      ? "--measure"
                               : std::strcmp(argv[1], "cluster") == 0 ? "--here"
                                                                      : nullptr;
  if (measuring_flag)
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], measuring_flag) == 0) return true;
  return false;
}

// libgomp has read its environment before main(): when the tool chooses the OpenMP wait
// behaviour (exec/machine_load.h), it re-executes itself once so that libgomp sees the choice.
// The second process finds GOMP_SPINCOUNT set and goes on; if exec fails, so does this one.
void choose_openmp_wait_policy(int argc, char** argv) {
  if (!computes(argc, argv)) return;
  if (pw::exec::choose_openmp_wait_policy().changed) ::execv("/proc/self/exe", argv);
}
}  // namespace
#endif

namespace {
// Unexpected "--flags" of the command given, each with the nearest flag it has (tools/suggest.h).
std::string flag_hint(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr || argc < 2) return "";
  CLI::App* sub = nullptr;
  try {
    sub = app.get_subcommand_ptr(argv[1]).get();
  } catch (const CLI::Error&) {}
  if (sub == nullptr) return "";
  std::vector<std::string> flags, positionals;
  for (const CLI::Option* o : sub->get_options()) {
    for (const std::string& n : o->get_lnames()) flags.push_back("--" + n);
    if (o->get_lnames().empty() && o->get_snames().empty() && !o->get_name().empty())
      positionals.push_back(o->get_name());
  }
  return pw::tools::unknown_flag_hint(std::vector<std::string>(argv + 2, argv + argc), flags, positionals);
}
}  // namespace

namespace pw::tools {
std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}
}  // namespace pw::tools

int main(int argc, char** argv) {
#ifdef PW_HAVE_EXEC
  choose_openmp_wait_policy(argc, argv);
  pw::exec::install_memory_crash_line("pipewright: ");  // a library's unchecked allocation: one line, exit 3
  pw::exec::install_cgroup_guard();  // past a cgroup's limit the kernel kills without a word: exit 3 instead
#endif
  pw::tools::install_cleanup_handlers();  // no temporary output file survives a signal
  CLI::App app{"pipewright: plans, simulates and runs pipeline-parallel training of deep networks", "pipewright"};
  app.set_version_flag("--version", std::string("pipewright ") + PW_VERSION);
  app.require_subcommand(1);
  auto& registry = pw::tools::command_registry();
  std::sort(registry.begin(), registry.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& entry : registry) entry.setup(app);
  std::vector<std::string> names;
  for (const auto& entry : registry) names.push_back(entry.name);
  if (argc >= 2 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    return pw::tools::reject_command_line(
        "pipewright: error: " + pw::one_line_message(pw::tools::unknown_command_message(argv[1], names)) + "\n",
        std::cerr);
  }
  pw::tools::install_flag_checks(app);  // every numeric flag: bounded, finite, units
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) { return app.exit(e); } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) { return app.exit(e); } catch (const CLI::ParseError& e) {
    return pw::tools::reject_command_line(
        "pipewright: error: " + pw::one_line_message(e.what() + flag_hint(app, e, argc, argv)) + " (see --help)\n",
        std::cerr);
  } catch (...) { return pw::tools::report_failure(std::current_exception(), std::cerr); }
  pw::tools::print_deferred_notes();  // only after success: a failure prints one line
  return 0;
}
