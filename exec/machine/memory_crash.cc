#include "exec/machine/memory_crash.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "exec/machine/memory.h"
#include "models/temp_registry.h"

namespace pw::exec {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS};
constexpr uintptr_t kNullPage = 64 << 10;

struct sigaction g_previous[2];
char g_prefix[64] = "pipewright: ";

// Appends s to buf (of size cap) at *len.
void put(char* buf, size_t cap, size_t* len, const char* s) {
  while (*s && *len + 1 < cap) buf[(*len)++] = *s++;
}

// Appends x / 2^20 with one decimal.
void put_mib(char* buf, size_t cap, size_t* len, int64_t bytes) {
  const int64_t tenths = bytes * 10 / (1 << 20);
  char digits[24];
  int n = 0;
  int64_t whole = tenths / 10;
  do {
    digits[n++] = static_cast<char>('0' + whole % 10);
    whole /= 10;
  } while (whole > 0 && n < 20);
  while (n > 0 && *len + 1 < cap) buf[(*len)++] = digits[--n];
  put(buf, cap, len, ".");
  const char tenth[2] = {static_cast<char>('0' + tenths % 10), '\0'};
  put(buf, cap, len, tenth);
}

void hand_on(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[sig == SIGSEGV ? 0 : 1];
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
    prev.sa_handler(sig);
    return;
  }
  // The default action: reset and return, so that the faulting access runs again and kills
  // the process with this signal (a core dump where enabled).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  if (info->si_code <= 0) ::raise(sig);  // sent, not raised by a fault: nothing runs again
}

void on_crash(int sig, siginfo_t* info, void* context) {
  const bool null_access = info->si_code > 0 && reinterpret_cast<uintptr_t>(info->si_addr) < kNullPage;
  const int64_t data = rlimit_headroom(RLIMIT_DATA, "VmData:");
  const int64_t space = rlimit_headroom(RLIMIT_AS, "VmSize:");
  const bool near_data = data >= 0 && data < kCrashHeadroomBytes;
  const bool near_space = space >= 0 && space < kCrashHeadroomBytes;
  if (!null_access || (!near_data && !near_space)) {
    hand_on(sig, info, context);
    return;
  }
  remove_temp_files();
  char line[320];
  size_t len = 0;
  put(line, sizeof line, &len, g_prefix);
  put(line, sizeof line, &len, "infeasible: host: out of memory: crashed on a null access with ");
  put_mib(line, sizeof line, &len, near_data ? data : space);
  put(line, sizeof line, &len, near_data ? " MiB left under ulimit -d" : " MiB left under ulimit -v");
  put(line, sizeof line, &len, " (a library's unchecked allocation); give it more memory\n");
  ssize_t ignored = ::write(STDERR_FILENO, line, len);
  (void)ignored;
  ::_exit(3);
}

}  // namespace

void set_memory_crash_prefix(const char* prefix) {
  const size_t n = std::min(std::strlen(prefix), sizeof g_prefix - 1);
  std::memcpy(g_prefix, prefix, n);
  g_prefix[n] = '\0';
}

void install_memory_crash_line(const char* prefix) {
  set_memory_crash_prefix(prefix);
  for (int k = 0; k < 2; ++k) {
    struct sigaction old {};
    if (::sigaction(kSignals[k], nullptr, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_crash) continue;  // installed and on top
    g_previous[k] = old;
    struct sigaction sa {};
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(kSignals[k], &sa, nullptr);
  }
}

}  // namespace pw::exec
