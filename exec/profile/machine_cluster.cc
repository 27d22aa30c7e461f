#include "exec/profile/machine_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "exec/machine/machine_load.h"
#include "exec/machine/memory.h"
#include "exec/profile/handoff.h"
#include "exec/profile/profiler.h"
#include "models/device.h"
#include "models/error.h"

namespace pw::exec {

models::Cluster cluster_from_packages(const std::vector<int>& package_of_core, const models::DeviceSpec& device,
                                      double socket_bytes_per_s, double machine_bytes_per_s, int64_t latency_ns) {
  if (latency_ns < 0) throw InputError("machine cluster: latency must be >= 0");
  if (package_of_core.empty()) throw InputError("machine cluster: no cores");
  std::map<int, int> per;
  for (int p : package_of_core) ++per[p];
  const int cores = per.begin()->second;
  for (const auto& [p, n] : per)
    if (n != cores)
      throw InputError("machine cluster: package " + std::to_string(p) + " has " + std::to_string(n) +
                       " cores, another " + std::to_string(cores) + " (the cluster model needs equal sockets)");
  std::vector<models::Level> levels{{"socket", cores, socket_bytes_per_s, latency_ns}};
  if (per.size() > 1) levels.push_back({"machine", static_cast<int>(per.size()), machine_bytes_per_s, latency_ns});
  return models::Cluster("this-machine", device, levels);
}

models::Cluster machine_cluster(const Machine& machine, const models::DeviceSpec& device, double socket_bytes_per_s,
                                double machine_bytes_per_s, int64_t latency_ns) {
  return cluster_from_packages(machine.package_of_core(), device, socket_bytes_per_s, machine_bytes_per_s, latency_ns);
}

double measure_copy_bandwidth() {
  const size_t n = size_t{16} << 20;
  std::vector<char> a(n, 1), b(n, 0);
  std::vector<double> rates;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(n) / std::max(s, 1e-9));
    a[rep] = b[n - 1 - rep];  // keep the copies observable
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

models::DeviceSpec this_machine_core(int64_t memory_bytes) {
  const int cores = Machine::instance().num_cores();
  models::DeviceSpec dev = models::find_device("cpu-core-avx2");
  dev.name = cpu_model_name() + " core";
  dev.source = "this machine (peak rates: the catalog's cpu-core-avx2)";
  dev.memory_bytes = memory_bytes > 0 ? memory_bytes : physical_memory_bytes() / cores;
  return dev;
}

models::Cluster this_machine_cluster(int64_t memory_bytes) {
  const double bw = measure_copy_bandwidth();
  // One core: no transfers, nothing to measure (the hand-off needs two threads). The planner
  // places at most one worker per core, so its runs wait as transport_spin(cores, cores) says.
  const int cores = Machine::instance().num_cores();
  HandoffOptions ho;
  ho.spin = transport_spin(cores, cores);
  const int64_t handoff = cores > 1 ? measure_handoff_ns(ho) : 0;
  return machine_cluster(Machine::instance(), this_machine_core(memory_bytes), bw, bw, handoff);
}

}  // namespace pw::exec
