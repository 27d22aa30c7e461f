// exec/profile/handoff.h: the hand-off measurement runs the runtime's transport between two
// pinned threads and reports a positive median; bad options are input errors. The value
// itself is a timing and is not checked against any threshold.
#include "exec/profile/handoff.h"

#include <doctest/doctest.h>

#include "models/error.h"

namespace pw::exec {
namespace {

TEST_CASE("hand-off: a sleeping receiver woken by a send, median of the trials") {
  HandoffOptions o;
  o.trials = 5;
  o.idle = std::chrono::microseconds(200);
  CHECK(measure_handoff_ns(o) > 0);
  o.trials = 0;
  CHECK_THROWS_AS(measure_handoff_ns(o), InputError);
}

}  // namespace
}  // namespace pw::exec
