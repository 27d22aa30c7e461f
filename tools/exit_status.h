// How the CLI ends when a command throws: the one line on stderr and the exit status (README,
// "Exit status"). One function, so that main and its test agree.
// Thread-safety: call from the main thread (writes to `err`).
#pragma once

#include <exception>
#include <ostream>

namespace pw::tools {

// Writes the line for `e` on `err` and returns the exit status:
// - CommandExit: its own code, its message (if any) as it is;
// - InputError: 2, "pipewright: error: ...";
// - Infeasible, and memory exhausted of any kind (OutOfMemory of the host or device allocators,
//   any std::bad_alloc, a backend's out-of-memory error): 3, "pipewright: infeasible: ...";
// - any other exception: 70, "pipewright: internal error: ...".
// Every message goes through one_line_message (models/error_text.h).
int report_failure(const std::exception_ptr& e, std::ostream& err);

// The rank an MPI launcher gave this process, read from its environment, so before MPI starts
// (Open MPI: OMPI_COMM_WORLD_RANK, PMIx: PMIX_RANK, MPICH's Hydra: PMI_RANK); 0 when none
// did or the value is not a number. Every rank parses the same command line, so a rejected
// command line is rank 0's line alone (main.cc).
int launcher_rank();

}  // namespace pw::tools
