// exec/machine_load.h: the load reading and the wait-policy choice.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "exec/machine/machine_load.h"

namespace pw::exec {
namespace {

TEST_CASE("machine load: a reading covers this process's cores and is within them") {
  const MachineLoad l = sample_machine_load(0.05);
  CHECK(l.cores >= 1);
  CHECK(l.window_s == doctest::Approx(0.05));
  CHECK(l.busy_cores >= 0.0);
  CHECK(l.busy_cores <= l.cores + 1e-9);
  CHECK(describe(l).find("cores busy") != std::string::npos);
}

TEST_CASE("machine load: busy from a quarter of the cores on") {
  CHECK_FALSE(is_busy(MachineLoad{2, 0.4, 0.25}));
  CHECK(is_busy(MachineLoad{2, 0.5, 0.25}));
  CHECK(is_busy(MachineLoad{2, 1.9, 0.25}));
}

TEST_CASE("wait policy: busy from what competes now, not from the lagging load average") {
  CHECK_FALSE(wait_policy_busy(0, 0, 0.0));
  CHECK_FALSE(wait_policy_busy(0, 0, 0.49));
  CHECK(wait_policy_busy(0, 0, 0.5));  // a neighbour that used half a core during the sample
  CHECK(wait_policy_busy(1, 1, 0.0));  // a neighbour runnable at both ends of the sample
  CHECK(wait_policy_busy(3, 2, 1.8));
  // A reader started beside this process (`run --json | jq`) is runnable while it starts, then
  // blocks on its input: not competition. Read once, it made every piped run choose "busy".
  CHECK_FALSE(wait_policy_busy(1, 0, 0.02));
  CHECK_FALSE(wait_policy_busy(0, 1, 0.02));
}

// Restores an environment variable (or its absence) when the scope ends.
struct SavedEnv {
  explicit SavedEnv(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) value_ = v, had_ = true;
  }
  ~SavedEnv() { had_ ? ::setenv(name_, value_.c_str(), 1) : ::unsetenv(name_); }
  const char* name_;
  std::string value_;
  bool had_ = false;
};

TEST_CASE("wait policy: the tool's choice records its sample") {
  SavedEnv spin("GOMP_SPINCOUNT"), policy("OMP_WAIT_POLICY"), tool("PW_OPENMP_SPIN");
  ::unsetenv("GOMP_SPINCOUNT");
  ::unsetenv("OMP_WAIT_POLICY");
  const WaitPolicy p = choose_openmp_wait_policy();
  CHECK_FALSE(p.user_set);
  CHECK(p.busy == (p.runnable_others >= 1 || p.busy_cores_sampled >= 0.5));
  CHECK(p.spin_count == (p.busy ? kBusySpinCount : kQuietSpinCount));
  CHECK(p.busy_cores_sampled >= 0.0);
  CHECK(std::string(std::getenv("GOMP_SPINCOUNT")) == std::to_string(p.spin_count));
}

TEST_CASE("wait policy: a user's OpenMP setting is never overridden") {
  ::setenv("GOMP_SPINCOUNT", "42", 1);
  const WaitPolicy p = choose_openmp_wait_policy();
  CHECK(p.user_set);
  CHECK_FALSE(p.changed);
  CHECK(std::string(std::getenv("GOMP_SPINCOUNT")) == "42");
  CHECK(describe_wait_policy().find("as set by the user") != std::string::npos);
  ::unsetenv("GOMP_SPINCOUNT");
}

TEST_CASE("transport spin: long only when the tool chose a quiet machine's waits and every worker has a core") {
  SavedEnv tool("PW_OPENMP_SPIN");
  ::unsetenv("PW_OPENMP_SPIN");  // a library caller that never chose
  CHECK(transport_spin(2, 2) == kDefaultTransportSpin);
  ::setenv("PW_OPENMP_SPIN", "quiet", 1);
  CHECK(transport_spin(1, 2) == kQuietTransportSpin);
  CHECK(transport_spin(2, 2) == kQuietTransportSpin);
  CHECK(transport_spin(3, 2) == kDefaultTransportSpin);  // workers share cores: a spinner steals its partner's time
  CHECK(transport_spin(0, 2) == kDefaultTransportSpin);
  ::setenv("PW_OPENMP_SPIN", "busy", 1);
  CHECK(transport_spin(2, 2) == kDefaultTransportSpin);
  CHECK(kQuietTransportSpin > kDefaultTransportSpin);
}

}  // namespace
}  // namespace pw::exec
