// The cluster the planner plans for when it plans for this machine (`plan --measure`): one
// device per core, in hwloc's levels (DESIGN.md, "Fidelity"; models/cluster.h):
//   level 0 "socket":  the cores of one package, joined by that package's caches / memory;
//   level 1 "machine": the packages, joined by the inter-socket link (only with > 1 package).
// Cores are in hwloc logical order, grouped by package, so device d of the cluster is logical
// core d and a stage of k cores at device d runs on cores d .. d + k - 1 — the block
// Machine::assign gives a worker. With k = cores per package, stages sit one per socket;
// smaller k pack stages into a socket, so the planner places stages within and across sockets
// by the levels' bandwidths.
//
// Bandwidths: `socket_bytes_per_s` and `machine_bytes_per_s` (measure_copy_bandwidth() gives
// this machine's hand-off rate: a buffer copy, which is what an in-process transfer is).
// Latency: `latency_ns` on both levels, the runtime's hand-off (exec/profile/handoff.h: a
// sleeping receiver woken by the sender), which this_machine_cluster() measures.
// Throws InputError when packages hold different numbers of cores (the cluster model needs
// equal groups).
#pragma once

#include <cstdint>
#include <vector>

#include "exec/machine/pinning.h"
#include "models/cluster.h"

namespace pw::exec {

models::Cluster cluster_from_packages(const std::vector<int>& package_of_core, const models::DeviceSpec& device,
                                      double socket_bytes_per_s, double machine_bytes_per_s, int64_t latency_ns = 0);

models::Cluster machine_cluster(const Machine& machine, const models::DeviceSpec& device, double socket_bytes_per_s,
                                double machine_bytes_per_s, int64_t latency_ns = 0);

// One core of this machine as a device: named after the CPU ("<model> core"), with `memory_bytes`
// (0: the machine's RAM divided by its cores) and the catalog's "cpu-core-avx2" peak rates —
// an estimate that only analytic costs use (a measured profile carries its own times), set so
// the device is one the cluster reader accepts.
models::DeviceSpec this_machine_core(int64_t memory_bytes = 0);

// The cluster of this machine: this_machine_core devices, copy bandwidth and hand-off latency
// measured once.
models::Cluster this_machine_cluster(int64_t memory_bytes = 0);

// Bytes per second of copying a 16 MiB buffer on the calling thread (median of 5).
double measure_copy_bandwidth();

}  // namespace pw::exec
