// The cluster flags `plan` and `cluster` share, and the one rule that turns them into a
// models::Cluster (the defaults live in models/defaults.h):
//   --cluster FILE                        a pipewright.cluster/1 file;
//   --devices N                           N devices of --device: for a catalog accelerator, nodes of
//                                         --devices-per-node joined by --intra-node, nodes joined by
//                                         --interconnect; for other devices (CPU cores, a profile's
//                                         own device) or with --bandwidth, one level at --bandwidth;
//   --levels N1,N2 [--bandwidths B1,B2]   PipeDream's hierarchy, innermost first;
//   --memory BYTES                        per device (default: the catalog's, else 16 GiB).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "models/cluster.h"
#include "models/defaults.h"

namespace pw::tools {

struct ClusterFlags {
  std::string cluster;  // file
  std::string device;   // catalog name or device JSON ("" = "generic")
  int devices = -1;     // -1: not given
  int devices_per_node = models::kDefaultDevicesPerNode;
  std::string intra_node = models::kDefaultIntraNode;
  std::string interconnect = models::kDefaultInterconnect;
  double bandwidth = 1.25e9;
  int64_t memory = 0;
  std::string levels, bandwidths;
};

// Registers --cluster --devices --devices-per-node --intra-node --interconnect --bandwidth
// --memory --levels --bandwidths (not --device: its help differs per command).
void add_cluster_options(CLI::App* sub, ClusterFlags& f);

// The cluster the flags describe (1 device when none are given). Throws InputError for
// conflicting forms (--cluster, --devices, --levels), --bandwidth with named links, bad lists.
models::Cluster build_cluster(const ClusterFlags& f, const CLI::App& sub);

}  // namespace pw::tools
