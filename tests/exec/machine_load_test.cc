// exec/machine_load.h: the load reading and the wait-policy choice.
#include <doctest/doctest.h>

#include <cstdlib>

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
