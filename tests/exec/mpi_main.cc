// main of pw_mpi_tests: every rank initializes MPI (one World) and runs the same doctest cases
// in the same order; a case is collective (every rank enters it). Run under
// `mpirun -np N` (tests/exec/CMakeLists.txt); a case says which sizes it needs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/exec/mpi_test_world.h"

namespace pw::exec::testing {
namespace {
mpi::World* g_world = nullptr;
}
mpi::World& world() { return *g_world; }
}  // namespace pw::exec::testing

int main(int argc, char** argv) {
  pw::exec::mpi::World world;
  pw::exec::testing::g_world = &world;
  doctest::Context ctx(argc, argv);
  const int fails = ctx.run();
  // Every rank's result counts: mpirun exits non-zero when any rank does.
  return fails ? 1 : 0;
}
