// How busy this machine's CPUs are, and the OpenMP waiting behaviour chosen from it.
//
// Why: libgomp's idle threads spin (about 300,000 iterations) before sleeping. On a machine of
// its own that is the fastest choice for a pipeline worker's many small parallel regions; with
// another job on the same cores a spinning thread burns the time slice its partner needs, and
// `train` ran 35x slower. Nobody should have to set OpenMP variables by hand, so the
// tool chooses the spin count itself, once, before libgomp reads its environment.
//
// Contract: libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is loaded, before
// main(); a value set later is never seen (and the executable's preinit array runs before libc
// has set up `environ`, so setenv there is lost too). So the tool decides in main() and, when
// it set something, re-executes itself once (tools/main.cc). choose_openmp_wait_policy() never
// throws and never overrides a value the user set (OMP_WAIT_POLICY or GOMP_SPINCOUNT).
#pragma once

#include <chrono>
#include <string>

namespace pw::exec {

// A reading of the CPUs this process may run on.
struct MachineLoad {
  int cores = 1;          // CPUs in this process's affinity mask
  double busy_cores = 0;  // CPU time used by everything on the machine, in cores, over the window
  double window_s = 0;    // length of the sampling window (0: instantaneous estimate)
};

// Samples /proc/stat twice, `window_s` apart, and reports the busy share of the machine's CPUs
// scaled to the cores this process may use. Call it while this process is idle to measure the
// load others put on the machine. Returns busy_cores = 0 when /proc is unreadable.
MachineLoad sample_machine_load(double window_s = 0.25);

// True when the reading leaves less than one idle core in every two the run wants: the
// threshold at which `run --compare` and `demo` say the comparison was taken on a busy machine.
bool is_busy(const MachineLoad& load);

// One line for users: "machine load: 1.8 of 2 cores busy (sampled over 0.25 s)".
std::string describe(const MachineLoad& load);

// The spin counts chosen (GOMP_SPINCOUNT): spin briefly then sleep on a quiet machine; sleep
// almost at once when other work competes for the cores.
inline constexpr long kQuietSpinCount = 20000;
inline constexpr long kBusySpinCount = 100;
inline constexpr double kWaitPolicySampleSeconds = 0.04;

struct WaitPolicy {
  bool user_set = false;          // OMP_WAIT_POLICY or GOMP_SPINCOUNT was in the environment: untouched
  bool changed = false;           // this call exported GOMP_SPINCOUNT: libgomp of this process has not seen it
  bool busy = false;              // the instantaneous estimate found the cores busy
  long spin_count = 0;            // what GOMP_SPINCOUNT was set to (when !user_set)
  double runnable_others = 0;     // runnable tasks besides this one at both ends of the sample (/proc/loadavg)
  double load_1min = 0;           // 1-minute load average (reported, not used: it lags)
  double busy_cores_sampled = 0;  // other processes' CPU use over a short sample, in cores
  int cores = 1;
};

// Chooses and exports GOMP_SPINCOUNT (see the contract above), and PW_OPENMP_SPIN="busy|quiet"
// so that the re-executed process knows the choice was the tool's. "Busy" when another task is
// runnable both before and after a kWaitPolicySampleSeconds sample (a reader just started
// beside this one, as `| jq`, is runnable only at the start), or other processes used half a
// core or more during it (sampled from /proc/stat while this process sleeps, so start-up
// costs that long). The 1-minute load average is not used: it still counts work that ended
// up to a minute ago (a build, the previous run) and so chose "busy" on idle machines.
WaitPolicy choose_openmp_wait_policy();

// The rule above: busy when another task is runnable (other than this process) at both ends of
// the sample, or others used >= half a core during it.
bool wait_policy_busy(double runnable_before, double runnable_after, double sampled_busy_cores);

// The choice in effect for this process: the tool's (PW_OPENMP_SPIN set), the user's, or none.
// One line for progress output: "OpenMP waits: spin 20000 then sleep (quiet machine)".
std::string describe_wait_policy();

// How long a pipeline worker waiting for a message spins (yielding) before it sleeps on the
// in-process transport (RuntimeOptions::spin, InProcTransport). Why: a sleeping receiver costs
// every hand-off a wake-up. On this project's 2-vCPU VM (exec/profile/handoff.h measures it) a
// message to a receiver asleep arrived after 76-100 us and the sender spent 31 us in isend
// waking it; to a receiver still spinning, 2-3 us and under 1 us. With the 50 us spin the
// workers slept in most pipeline bubbles: 2-stage runs of the default and the small gpt were
// slower than with a 5 ms spin in 15 of 18 A/B pairs, by up to 16% (bench/RESULTS.md,
// "Waiting workers"). Spinning costs nothing on a core of one's own, and hurts a job sharing
// it, so: kQuietTransportSpin when the tool chose the quiet machine's OpenMP waits for this
// process (PW_OPENMP_SPIN=quiet, choose_openmp_wait_policy) and every worker has a core of its
// own (workers <= cores); kDefaultTransportSpin otherwise (busy machine, OpenMP variables set by
// the user, more workers than cores, or a library caller that never chose). Never throws.
inline constexpr std::chrono::microseconds kQuietTransportSpin{5000};
inline constexpr std::chrono::microseconds kDefaultTransportSpin{50};
std::chrono::nanoseconds transport_spin(int workers, int cores);

}  // namespace pw::exec
