// The CLI's last word: each kind of exception a command can throw ends in one line on stderr and
// its exit status (tools/exit_status.h; README, "Exit status").
#include <doctest/doctest.h>

#include <cstdlib>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include "models/error.h"
#include "tools/exit_status.h"
#include "tools/signals.h"
#ifdef PW_HAVE_EXEC
#include <dnnl.hpp>
#endif

namespace pw::tools {
namespace {

struct Ending {
  int code = -1;
  std::string err;
};

template <typename E>
Ending ending_of(const E& e) {
  std::ostringstream err;
  const int code = report_failure(std::make_exception_ptr(e), err);
  return {code, err.str()};
}

}  // namespace

TEST_CASE("report_failure: bad input 2, infeasible and out of memory 3, anything else 70, one line each") {
  const auto check = [](const Ending& got, int code, const std::string& line) {
    CAPTURE(got.err);
    CHECK(got.code == code);
    CHECK(got.err == line + "\n");
  };
  check(ending_of(InputError("--batch: expected >= 1")), 2, "pipewright: error: --batch: expected >= 1");
  check(ending_of(Infeasible("no plan fits")), 3, "pipewright: infeasible: no plan fits");
  check(ending_of(OutOfMemory("host: out of memory: 12.00 MiB requested, 38.60 MiB in tensors")), 3,
        "pipewright: infeasible: host: out of memory: 12.00 MiB requested, 38.60 MiB in tensors");
  check(ending_of(std::bad_alloc()), 3, "pipewright: infeasible: out of memory (std::bad_alloc)");
  check(ending_of(std::runtime_error("a broken invariant\nover two lines")), 70,
        "pipewright: internal error: a broken invariant\\nover two lines");
  check(ending_of(42), 70, "pipewright: internal error: an exception that is not a std::exception");
#ifdef PW_HAVE_EXEC
  check(ending_of(dnnl::error(dnnl_out_of_memory, "could not create a primitive")), 3,
        "pipewright: infeasible: out of memory (oneDNN: could not create a primitive)");
  check(ending_of(dnnl::error(dnnl_unimplemented, "could not create a primitive")), 70,
        "pipewright: internal error: could not create a primitive");
#endif
}

TEST_CASE("report_failure: a command's own exit keeps its code and prints its message as it is") {
  const Ending stopped = ending_of(CommandExit(130, "pipewright: stopped by SIGINT after step 3 of 10"));
  CHECK(stopped.code == 130);
  CHECK(stopped.err == "pipewright: stopped by SIGINT after step 3 of 10\n");
  const Ending quiet = ending_of(CommandExit(1, ""));
  CHECK(quiet.code == 1);
  CHECK(quiet.err.empty());
}

TEST_CASE("launcher_rank: the rank an MPI launcher set, else 0") {
  const char* names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
  for (const char* n : names) unsetenv(n);
  CHECK(launcher_rank() == 0);
  for (const char* n : names) {
    CAPTURE(n);
    setenv(n, "3", 1);
    CHECK(launcher_rank() == 3);
    setenv(n, "3x", 1);  // not a number: as if unset
    CHECK(launcher_rank() == 0);
    setenv(n, "-1", 1);
    CHECK(launcher_rank() == 0);
    unsetenv(n);
  }
}

TEST_CASE("reject_command_line: rank 0 writes at once, another rank after its wait") {
  unsetenv("PMIX_RANK");
  unsetenv("PMI_RANK");
  std::ostringstream err;
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  CHECK(reject_command_line("pipewright: error: x\n", err, std::chrono::hours(1)) == 2);  // no wait on rank 0
  CHECK(err.str() == "pipewright: error: x\n");
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);  // the job went on: rank 2's own line after the wait
  CHECK(reject_command_line("pipewright: error: y\n", err, std::chrono::milliseconds(1)) == 2);
  CHECK(err.str() == "pipewright: error: x\npipewright: error: y\n");
  unsetenv("OMPI_COMM_WORLD_RANK");
}

}  // namespace pw::tools
