// How the CLI ends when a command throws: the one line on stderr and the exit status (README,
// "Exit status"). One function, so that main and its test agree.
// Thread-safety: call from the main thread (writes to `err`).
#pragma once

#include <chrono>
#include <exception>
#include <ostream>
#include <string>

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
// did or the value is not a number.
int launcher_rank();

// A command line the parser rejected: writes `line` (one write) on `err` and returns 2. Under
// mpirun every rank rejects the same command line, so the job says it once: rank 0 writes at
// once and exits, which ends the job; any other rank first waits `others_wait` for that end
// (mpirun kills it meanwhile), and writes its own line only if the job goes on (rank 0 was
// given another command line). Exiting at once, a rank 2 could end the job before rank 0 wrote.
int reject_command_line(const std::string& line, std::ostream& err,
                        std::chrono::milliseconds others_wait = std::chrono::seconds(10));

}  // namespace pw::tools
