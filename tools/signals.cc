#include "tools/signals.h"

#include <unistd.h>

#include <iterator>

#include "models/temp_registry.h"

namespace pw::tools {

namespace {

volatile std::sig_atomic_t g_received = 0;
volatile std::sig_atomic_t g_from_parent = 0;

// The stop handler runs on its own stack (SA_ONSTACK) on the thread that constructed
// StopSignals, so the kernel's signal frame is not pushed below the interrupted code's stack
// pointer. Measured on `mpirun -np 2 pipewright run`, SIGTERM to rank 1 in its first steps:
// without it 5 of 110 runs died in rank 1 of heap corruption inside a oneDNN matmul's free
// (glibc "corrupted size vs. prev_size while consolidating", during the step the signal came
// in), consistent with JIT code keeping data below its stack pointer beyond the ABI's red zone;
// with it 0 of 120. Other threads that may take the signal: the data loader's producer blocks
// them (exec/data/loader.cc); OpenMP workers (--threads > 1) do not yet.
alignas(64) char g_stop_stack[64 * 1024];

constexpr int kCleanupSignals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGPIPE, SIGALRM,
                                   SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGABRT};
constexpr int kMaxSignal = 65;
struct sigaction g_previous[kMaxSignal];

extern "C" void on_cleanup_signal(int sig) {
  if (!claim_for_signal(sig)) return;  // a commit is under way: raised again at its end
  remove_temp_files();
  sigaction(sig, &g_previous[sig], nullptr);
  raise(sig);  // delivered with the previous disposition when this handler returns
}

extern "C" void on_stop_signal(int sig, siginfo_t* info, void*) {
  if (g_received == 0) {
    g_from_parent =
        (sig == SIGINT || sig == SIGTERM) && info != nullptr && info->si_code == SI_USER && info->si_pid == getppid()
            ? 1
            : 0;
    g_received = sig;
    return;
  }
  if (!claim_for_signal(sig)) return;  // second signal during a commit: raised again at its end
  remove_temp_files();
  _exit(128 + sig);  // second signal: at once
}

}  // namespace

void install_cleanup_handlers() {
  for (const int sig : kCleanupSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    g_previous[sig] = old;
    struct sigaction sa {};
    sa.sa_handler = on_cleanup_signal;
    sigemptyset(&sa.sa_mask);
    for (const int other : kCleanupSignals) sigaddset(&sa.sa_mask, other);  // one handler at a time
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
  }
}

StopSignals::StopSignals(bool forwarded_too) : forwarded_too_(forwarded_too) {
  g_received = 0;
  g_from_parent = 0;
  struct sigaction sa {};
  sa.sa_sigaction = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) sigaddset(&sa.sa_mask, sig);  // one at a time
  sa.sa_flags = SA_RESTART | SA_SIGINFO | SA_ONSTACK;
  stack_t ss{};
  ss.ss_sp = g_stop_stack;
  ss.ss_size = sizeof g_stop_stack;
  sigaltstack(&ss, &old_stack_);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  if (forwarded_too_) {
    sigaction(SIGUSR1, &sa, &old_usr1_);
    sigaction(SIGUSR2, &sa, &old_usr2_);
  }
}

StopSignals::~StopSignals() {
  sigaltstack(&old_stack_, nullptr);
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  if (forwarded_too_) {
    sigaction(SIGUSR1, &old_usr1_, nullptr);
    sigaction(SIGUSR2, &old_usr2_, nullptr);
  }
}

int StopSignals::received() { return g_received; }
bool StopSignals::from_parent() { return g_from_parent != 0; }

std::string StopSignals::name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "signal " + std::to_string(sig);
  }
}

}  // namespace pw::tools
