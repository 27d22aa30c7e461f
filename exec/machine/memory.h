// This machine's memory, read in one place for the profiler, the planner's default cluster and
// the measurement checks.
// Thread-safety: both functions read /proc or sysconf on every call; safe from any thread.
#pragma once

#include <cstdint>

namespace pw::exec {

// Physical memory: physical pages x page size; 0 when sysconf cannot tell.
int64_t physical_memory_bytes();

// Memory the kernel says can still be given to programs: MemAvailable of /proc/meminfo, or
// physical_memory_bytes() where that is missing; 0 when neither can be read.
int64_t available_memory_bytes();

}  // namespace pw::exec
