// A crash that is an allocation failure in disguise, reported as one.
//
// oneDNN 2.6 generates some of its kernels on first use, inside a std::call_once, and does not
// check that generating them got memory: under a limit reached during a run (ulimit -d or -v)
// it calls a null kernel and the process dies of SIGSEGV at address 0 (seen under mpirun: a
// 4-rank GPT 8 x 1024 at ulimit -d 500000-530000 KiB; the same run at 470000 KiB ran out in
// Pipewright's own allocator and said so, exit 3). Nothing checks first: the up-front memory
// checks count the model's tensors, not the libraries' own buffers.
//
// install_memory_crash_line(prefix): SIGSEGV and SIGBUS handlers. When the fault is a null
// access (address below 64 KiB, raised by the kernel) and this process is within
// kCrashHeadroomBytes of its RLIMIT_DATA or RLIMIT_AS, the handler removes the temporary output
// files (models/temp_registry.h), writes one line
//   "<prefix>infeasible: host: out of memory: crashed on a null access with 3.2 MiB left under
//    ulimit -d (a library's unchecked allocation); give it more memory"
// and exits 3 (the out-of-memory exit, tools/exit_status.h). Any other crash goes to the
// handler installed before (Open MPI's backtrace, a sanitizer's report) or the default action
// (core dump), as if this one were not there. Async-signal-safe: reads /proc/self/status with
// open/read, writes with write, ends with _exit.
// Call it again after a library that installs its own handlers (MPI_Init); the later call keeps
// that library's handler as the one it hands other crashes to. set_memory_crash_prefix changes
// the line's prefix (an MPI rank: "pipewright: rank 1: "); at most 63 characters are kept.
#pragma once

#include <cstdint>

namespace pw::exec {

inline constexpr int64_t kCrashHeadroomBytes = int64_t{64} << 20;

void install_memory_crash_line(const char* prefix);
void set_memory_crash_prefix(const char* prefix);

}  // namespace pw::exec
