// Signals: no temporary file survives one, and a graceful stop for the long-running commands.
//
// install_cleanup_handlers() (main, before any command): SIGHUP, SIGINT, SIGQUIT, SIGTERM,
// SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ and SIGABRT (those not ignored when the
// process started) remove every temporary output file (models/temp_registry.h) and then end
// the process as the signal's previous disposition does (the default: killed by it). During
// the renames of an OutputSet's commit the signal waits until the group is in place.
// SIGKILL and SIGSTOP cannot be caught; a SIGKILL leaves at most the temporaries of outputs
// being written (".<name>.tmp<pid>-<n>" beside each output), never a half-written output.
//
// StopSignals (train, run) replaces the SIGINT / SIGTERM handlers for its lifetime (the
// previous ones come back on destruction). The first signal only records itself
// (async-signal-safe: one sig_atomic_t store); the trainer and the pipeline runtime poll
// stop_requested() at step boundaries, finish the current step, checkpoint and return, and the
// command writes and commits its outputs. A second signal removes the temporary files and ends
// the process at once with _exit(128 + signal): no destructors, no output files beyond those
// already renamed into place (after an OutputSet's commit under way, when one is).
// The handler also records whether the first signal was a SIGINT / SIGTERM from this process's
// parent (the sender's pid is getppid(): under mpirun, mpirun or its orted forwarding its own SIGINT /
// SIGTERM as the first step of tearing the job down, see tools/mpi_stop.h), and, constructed
// with `forwarded_too`, also treats SIGUSR1 / SIGUSR2 as stop requests (exit 138 / 140): Open
// MPI's mpirun forwards those to every rank without tearing the job down. The stop handler
// runs on its own stack (sigaltstack, on the thread that constructs StopSignals: see
// signals.cc for the heap corruption it prevents).
//
// CommandExit: thrown by a command to end with a given exit code and one message line (main
// prints it and returns the code): 130 / 143 after SIGINT / SIGTERM, 4 on a numerical fault.
#pragma once

#include <csignal>
#include <stdexcept>
#include <string>

namespace pw::tools {

void install_cleanup_handlers();

class StopSignals {
 public:
  explicit StopSignals(bool forwarded_too = false);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received (SIGINT or SIGTERM), 0 when none.
  static int received();
  static bool stop_requested() { return received() != 0; }
  // True when the first signal was a SIGINT / SIGTERM sent by this process's parent (see above).
  static bool from_parent();
  // "SIGINT", "SIGTERM", "SIGUSR1", "SIGUSR2".
  static std::string name(int sig);

 private:
  bool forwarded_too_ = false;
  struct sigaction old_int_ {
  }, old_term_{}, old_usr1_{}, old_usr2_{};
  stack_t old_stack_{};
};

// Exit code of a run stopped by `sig`: 128 + sig (130 SIGINT, 143 SIGTERM).
inline int exit_code_for_signal(int sig) { return 128 + sig; }
// Exit code of a numerical fault (NaN / Inf in a loss, gradient or weight).
inline constexpr int kExitNumericalFault = 4;

class CommandExit : public std::runtime_error {
 public:
  CommandExit(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

}  // namespace pw::tools
