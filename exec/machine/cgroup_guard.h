// Keeps the host allocator inside this process's cgroup memory limits while a run goes on.
//
// A process that takes its cgroup past its memory limit is killed by the kernel without a word
// (SIGKILL, exit 137): inside a container or a batch job's allocation, that is what running out
// of memory looks like, and the work since the last checkpoint is lost without a reason given.
// Installed (install_cgroup_guard) as the host allocators' SystemMemoryGate (exec/tensor.h),
// it is asked by admit() before they take memory from the system and told by released() when
// they give memory back. admit() refuses what would leave less than
// cgroup_reserve_bytes (exec/machine/memory.h) of the cgroups' headroom, so the allocator's own
// failure path runs instead: return its cache, try once more, then pw::OutOfMemory (one line,
// exit 3). The up-front checks compare against the same headroom less the same reserve.
//
// The headroom is read from the cgroup files only when needed: at the first call, then whenever
// the bytes admitted since the last reading would pass a sixteenth of what that reading left,
// per process of the job on this host (local_process_count: they share the cgroup, one guard
// each, so together they admit at most a sixteenth between readings; the reserve counts each).
// Far from the limit that is a reading every few hundred MiB, near it at every allocation. The
// bytes admitted since the last reading are taken off the next one too: mapped memory is charged
// to the cgroup only once written, so they may not show in it yet (this errs on the safe side
// by at most that sixteenth). Without a limit at the first reading the guard admits everything
// and never reads again.
//
// Thread-safety: thread-safe; one mutex, taken on the allocator's path to the system only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

#include "exec/machine/memory.h"
#include "exec/tensor.h"

namespace pw::exec {

class CgroupGuard final : public SystemMemoryGate {
 public:
  // `read`: the cgroups' limit and headroom now (process_cgroup_memory for the process's guard);
  // `processes`: the job's processes on this host that share the cgroup (>= 1).
  explicit CgroupGuard(std::function<CgroupMemory()> read, int processes = 1)
      : read_(std::move(read)), processes_(processes < 1 ? 1 : processes) {}

  // Whether `bytes` more may be taken from the system now; an admitted amount counts until
  // released().
  bool admit(int64_t bytes) override;
  // `bytes` admitted earlier were given back to the system (and uncharged: unmapped).
  void released(int64_t bytes) override;
  // " (its cgroup allows <limit>, less <reserve> kept for memory outside tensors)".
  std::string refusal() const override;
  // The limit of the last reading (-1: none, or not read yet).
  int64_t limit() const;

 private:
  std::function<CgroupMemory()> read_;
  int processes_;
  std::atomic<bool> unlimited_{false};  // no limit at the first reading: nothing to guard
  mutable std::mutex mu_;
  bool read_once_ = false;
  int64_t limit_ = -1;
  int64_t budget_ = 0;      // bytes that may still be admitted (headroom less the reserves, less admitted)
  int64_t next_read_ = 0;   // re-read once budget_ would drop below this
  int64_t since_read_ = 0;  // bytes admitted since the last reading
};

// The process's guard over /proc/self/cgroup.
CgroupGuard& process_cgroup_guard();
// Makes process_cgroup_guard() every host allocator's gate (Allocator::set_system_gate). The
// commands call it first thing (tools/main.cc); before any thread allocates.
void install_cgroup_guard();

}  // namespace pw::exec
