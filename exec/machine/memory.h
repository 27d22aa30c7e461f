// This machine's memory, and the limits this process runs under, read in one place for the
// profiler, the planner's default cluster, the measurement checks and the commands' up-front
// "does it fit" checks.
// Thread-safety: every function reads /proc, /sys or sysconf on each call; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pw::exec {

// Physical memory: physical pages x page size; 0 when sysconf cannot tell.
int64_t physical_memory_bytes();

// The "Key:  N kB" line of /proc/self/status (key with its colon: "VmData:", "VmRSS:") in bytes,
// -1 where unread. Async-signal-safe (open, read, no allocation).
int64_t self_status_bytes(const char* key);

// The soft rlimit `resource` (RLIMIT_DATA, RLIMIT_AS) less what this process already holds of
// it (`status_key` of /proc/self/status: "VmData:", "VmSize:"; 0 where unread), in bytes; -1
// for no limit. Async-signal-safe (getrlimit, open, read): memory_crash.h's handler calls it.
int64_t rlimit_headroom(int resource, const char* status_key);

// Memory this process can still be given now: the least of MemAvailable (/proc/meminfo, or
// physical_memory_bytes() where that is missing), its cgroups' headroom (limit less usage) and its
// rlimits' headroom (memory_bound's); 0 when none of these can be read.
int64_t available_memory_bytes();

// The most memory this process can come to hold, and which bound that is. A container or a batch
// job (cgroup memory limit) or a shell's ulimit may allow far less than the machine has; a
// process that goes past a cgroup's limit is killed without a word, so commands check here first
// (and the host allocator stays below it while it runs: exec/machine/cgroup_guard.h).
struct MemoryBound {
  // cgroup: a cgroup's limit; cgroup_left: what it still allows (its headroom, less the
  // reserves of memory_bound).
  enum class Source { machine, cgroup, cgroup_left, address_space, data };
  int64_t bytes = 0;  // 0: nothing could be read
  Source source = Source::machine;
};
// The least of physical memory, process_cgroup_memory().headroom less
// cgroup_reserve_bytes(limit, local_process_count()),
// RLIMIT_AS less the address space it already maps (VmSize) and RLIMIT_DATA less its data already
// mapped (VmData, of /proc/self/status). A source that cannot be read is left out.
MemoryBound memory_bound();
// The bounds this process shares with the others of its host and cgroup (several MPI ranks on
// one machine): the least of physical memory and the cgroup limit, without the rlimits, which
// are per process.
MemoryBound host_memory_bound();

// The cgroup memory limits over a process whose /proc/PID/cgroup reads `proc_cgroup`, with the
// cgroup file systems mounted under `root` (/sys/fs/cgroup): cgroup v2 (memory.max, memory.current
// at root/PATH for the "0::PATH" line) and v1 (memory.limit_in_bytes, memory.usage_in_bytes at
// root/memory/PATH for the line naming the memory controller), read for the cgroup and every
// ancestor up to root. limit: the least limit found; headroom: the least (limit - held) found,
// where held is the usage less the page cache the kernel reclaims before it kills (memory.stat's
// file LRU lists); -1 for each where no level has a limit ("max", v1's unlimited value, or files
// missing).
struct CgroupMemory {
  int64_t limit = -1, headroom = -1;
};
// The memory controller's cgroups named by `proc_cgroup` (a /proc/PID/cgroup): for each, whether
// it is v2, where its hierarchy is mounted under `root` (v2: root, v1: root/memory) and its
// path there ("/a/b"); the cgroup's directory is mount + path.
struct MemoryCgroup {
  bool v2 = false;
  std::string mount, path;
};
std::vector<MemoryCgroup> memory_cgroups(const std::string& proc_cgroup, const std::string& root);
CgroupMemory cgroup_memory(const std::string& proc_cgroup, const std::string& root);
// This process's: cgroup_memory of /proc/self/cgroup under /sys/fs/cgroup.
CgroupMemory process_cgroup_memory();

// What the host allocators of `processes` processes sharing a cgroup leave free below its limit
// of `limit` bytes, for what will not come from them (oneDNN's scratch, the C library's own,
// thread stacks; what a process already holds is in the cgroup's usage): 16 MiB a process +
// limit / 32. Training gpt d 256 grew 26 MB beyond its tensors, d 512 90 MB (bench/RESULTS.md,
// "a cgroup's limit").
int64_t cgroup_reserve_bytes(int64_t limit, int processes);

// The processes of this job on this host, which share its cgroup: the launcher's local size
// (OMPI_COMM_WORLD_LOCAL_SIZE, PMIX_LOCAL_SIZE, MPI_LOCALNRANKS), 1 without one.
int local_process_count();

// The bound in words, for a message that goes on "... needs at least X GiB, more than ": e.g.
// "this machine's 23.4 GiB of memory", "the 8.0 GiB its cgroup allows (a container's or a job's
// memory limit)", "the 0.2 GiB this process may still map under ulimit -d"; with `decimals`
// digits after the point (a message whose need rounds to the same text asks for more).
std::string describe(const MemoryBound& bound, int decimals = 1);

}  // namespace pw::exec
