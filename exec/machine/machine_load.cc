#include "exec/machine/machine_load.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace pw::exec {
namespace {

// Reads a small /proc file into buf (NUL-terminated); returns the length, or -1.
long read_proc(const char* path, char* buf, long size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long n = 0;
  while (n < size - 1) {
    const ssize_t r = ::read(fd, buf + n, static_cast<size_t>(size - 1 - n));
    if (r <= 0) break;
    n += r;
  }
  ::close(fd);
  buf[n] = '\0';
  return n;
}

int affinity_cores(cpu_set_t* set) {
  CPU_ZERO(set);
  if (sched_getaffinity(0, sizeof(cpu_set_t), set) != 0) return 1;
  return std::max(1, CPU_COUNT(set));
}

struct CpuTimes {
  int cpu = -1;
  unsigned long long busy = 0, total = 0;
};

// Per-CPU (busy, total) jiffies from /proc/stat, for the CPUs in `set`.
std::vector<CpuTimes> read_cpu_times(const cpu_set_t& set) {
  std::vector<CpuTimes> out;
  FILE* f = std::fopen("/proc/stat", "re");
  if (!f) return out;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') continue;
    char* p = line + 3;
    const long cpu = std::strtol(p, &p, 10);
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)) continue;
    unsigned long long v[10] = {};
    for (auto& x : v) x = std::strtoull(p, &p, 10);
    CpuTimes t;
    t.cpu = static_cast<int>(cpu);
    // user nice system idle iowait irq softirq steal guest guest_nice; guests are inside user.
    for (int i = 0; i < 8; ++i) t.total += v[i];
    t.busy = t.total - v[3] - v[4];
    out.push_back(t);
  }
  std::fclose(f);
  return out;
}

}  // namespace

MachineLoad sample_machine_load(double window_s) {
  cpu_set_t set;
  MachineLoad load;
  load.cores = affinity_cores(&set);
  load.window_s = window_s;
  const std::vector<CpuTimes> a = read_cpu_times(set);
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  const std::vector<CpuTimes> b = read_cpu_times(set);
  if (a.empty() || a.size() != b.size()) return load;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned long long total = b[i].total - a[i].total;
    if (total > 0) load.busy_cores += double(b[i].busy - a[i].busy) / double(total);
  }
  return load;
}

bool is_busy(const MachineLoad& load) { return load.busy_cores >= 0.25 * load.cores; }

std::string describe(const MachineLoad& load) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "machine load: %.1f of %d cores busy (sampled over %.2f s)", load.busy_cores,
                load.cores, load.window_s);
  return buf;
}

bool wait_policy_busy(double runnable_before, double runnable_after, double sampled_busy_cores) {
  return std::min(runnable_before, runnable_after) >= 1 || sampled_busy_cores >= 0.5;
}

WaitPolicy choose_openmp_wait_policy() {
  WaitPolicy p;
  cpu_set_t set;
  p.cores = affinity_cores(&set);
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) {
    p.user_set = true;
    return p;
  }
  // /proc/loadavg: "0.50 0.40 0.30 R/T last_pid"; R counts runnable tasks, this one included.
  // Read before and after the CPU sample below; a task counts only if it is runnable at both
  // ends. A reader started beside this process (`pipewright run --json | jq`, a shell's
  // `$(...)`) is runnable for its first few milliseconds and then blocks; read once, it made
  // every piped run choose the busy waits (bench/decision.sh measured all its
  // candidates so while plan --measure, writing to a file, chose the quiet ones).
  const auto runnable_others = [&p] {
    char buf[256];
    if (read_proc("/proc/loadavg", buf, sizeof buf) <= 0) return 0.0;
    char* s = buf;
    p.load_1min = std::strtod(s, &s);
    std::strtod(s, &s);
    std::strtod(s, &s);
    return static_cast<double>(std::max(0L, std::strtol(s, &s, 10) - 1));
  };
  const double runnable_before = runnable_others();
  // Busy = other work competes for the cores NOW: another task runnable at both ends of a short
  // sample, or other processes used half a core or more during it. Not the 1-minute load
  // average: it lags by a minute, so right after a build (or the previous run of a benchmark
  // grid) it chose "busy" on an idle machine, and a 2-thread worker then ran up to 1.8x slower
  // than its profile (spin 100 vs 20000, measured 126 vs 74 ms per step).
  const MachineLoad sampled = sample_machine_load(kWaitPolicySampleSeconds);
  const double runnable_after = runnable_others();
  p.runnable_others = std::min(runnable_before, runnable_after);
  p.busy_cores_sampled = sampled.busy_cores;
  p.busy = wait_policy_busy(runnable_before, runnable_after, sampled.busy_cores);
  p.spin_count = p.busy ? kBusySpinCount : kQuietSpinCount;
  char value[32];
  std::snprintf(value, sizeof value, "%ld", p.spin_count);
  p.changed =
      ::setenv("GOMP_SPINCOUNT", value, 0) == 0 && ::setenv("PW_OPENMP_SPIN", p.busy ? "busy" : "quiet", 1) == 0;
  return p;
}

std::string describe_wait_policy() {
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* tool = std::getenv("PW_OPENMP_SPIN");
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  if (tool && spin)
    return std::string("OpenMP waits: spin ") + spin + " then sleep (chosen for a " + tool + " machine)";
  std::string s = "OpenMP waits: as set by the user (";
  if (policy) s += std::string("OMP_WAIT_POLICY=") + policy + (spin ? " " : "");
  if (spin) s += std::string("GOMP_SPINCOUNT=") + spin;
  return s + ")";
}

std::chrono::nanoseconds transport_spin(int workers, int cores) {
  const char* tool = std::getenv("PW_OPENMP_SPIN");
  const bool quiet = tool != nullptr && std::strcmp(tool, "quiet") == 0;
  if (quiet && workers >= 1 && workers <= cores) return kQuietTransportSpin;
  return kDefaultTransportSpin;
}

}  // namespace pw::exec
