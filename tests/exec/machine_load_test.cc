// exec/machine_load.h: the load reading and the wait-policy choice.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "exec/machine_load.h"

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
  CHECK_FALSE(wait_policy_busy(0, 0.0));
  CHECK_FALSE(wait_policy_busy(0, 0.49));
  CHECK(wait_policy_busy(0, 0.5));  // a neighbour that used half a core during the sample
  CHECK(wait_policy_busy(1, 0.0));  // a neighbour runnable at this instant
  CHECK(wait_policy_busy(3, 1.8));
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
  CHECK(p.busy == wait_policy_busy(p.runnable_others, p.busy_cores_sampled));
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

}  // namespace
}  // namespace pw::exec
