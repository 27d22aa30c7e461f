// Pinning stage workers to cores (hwloc).
//
// Each worker gets its own block of cores; on a multi-socket machine workers are spread over
// the packages (sockets) first, so that a worker's cores and memory sit on one socket. When
// there are fewer cores than workers, workers share cores round-robin (`shared` is set and
// the caller should warn: the run still works, only slower).
//
// Memory: binding a thread also binds its memory policy to the NUMA nodes of its cores
// (hwloc HWLOC_MEMBIND_BIND, per thread) on machines with more than one NUMA node, so buffers
// a worker allocates and touches first live on its node. On one node this is a no-op.
// Thread-safety: a Machine is read-only after construction; bind_current_thread may be called
// from many threads at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace pw::exec {

struct CoreSet {
  std::vector<int> cores;         // logical core indices (hwloc order)
  int package = 0;                // package (socket) of the cores
  bool shared = false;            // another worker also runs on (some of) these cores
  std::string to_string() const;  // "cores 0-3 (socket 0)"
};

// Pure assignment rule (testable without hwloc): `package_of_core[c]` is the package of
// logical core c, cores listed in hwloc logical order (grouped by package).
// Workers are split over packages in contiguous groups (proportionally to their core
// counts), then each package's cores are split evenly among its workers, contiguous blocks,
// earlier workers taking the extra cores. Requires num_workers >= 1 and at least one core.
std::vector<CoreSet> assign_cores(const std::vector<int>& package_of_core, int num_workers);

// One line, "" when every worker has its own cores.
std::string oversubscription_warning(int num_workers, int num_cores);

class Machine {
 public:
  Machine();  // loads the hwloc topology of the allowed CPUs; throws InputError on failure
  // An hwloc synthetic topology ("package:2 core:4 pu:1") instead of this machine's, for tests
  // of placement; binding threads to it is meaningless. Throws InputError when hwloc rejects it.
  explicit Machine(const std::string& synthetic);
  ~Machine();
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  int num_cores() const;
  int num_packages() const;
  int num_numa_nodes() const;
  std::vector<int> package_of_core() const;
  std::vector<CoreSet> assign(int num_workers) const { return assign_cores(package_of_core(), num_workers); }

  // Binds the calling thread to the PUs of `set.cores` (and its memory to their NUMA nodes
  // when the machine has several). Returns false and sets *why when the OS refuses.
  bool bind_current_thread(const CoreSet& set, std::string* why = nullptr) const;
  // The PUs the calling thread may run on now (OS indices), for tests and diagnostics.
  std::vector<int> current_thread_pus() const;

  // Process-wide instance, loaded on first use.
  static const Machine& instance();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::exec
