// The MPI world of pw_mpi_tests (initialized by tests/exec/mpi_main.cc).
#pragma once

#include "exec/transport/mpi_world.h"

namespace pw::exec::testing {
mpi::World& world();
}  // namespace pw::exec::testing
