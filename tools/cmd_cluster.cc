// `pipewright cluster`: write and describe cluster files (pipewright.cluster/1, docs/cluster.md).
//   pipewright cluster --device a100-80g --devices 16 [--devices-per-node 8] [--intra-node nvlink3]
//       [--interconnect ib-100g] [--memory 80GiB] [-o cluster.json] [--json]
//   pipewright cluster --levels 4,4 --bandwidths 10GB/s,1.25GB/s --device v100-16g -o c.json
//   pipewright cluster --here -o here.json      this machine's cores as hwloc sees them
//   pipewright cluster --describe c.json        read a file and describe it
//   pipewright cluster --list                   the catalog's devices and links
// The description (stdout) names every level: its count, devices per group, link rate and
// latency, plus the device; -o writes the same cluster as JSON, which `plan --cluster` and
// `simulate --cluster` read back unchanged.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "models/cluster.h"
#include "models/device.h"
#include "models/error.h"
#include "models/output_set.h"
#include "tools/cluster_flags.h"
#include "tools/command_registry.h"
#include "tools/model_report.h"

#ifdef PW_HAVE_EXEC
#include "exec/profile/machine_cluster.h"
#endif

namespace {

struct ClusterArgs {
  pw::tools::ClusterFlags cl;
  std::string describe, output;
  bool here = false, list = false, json = false;
};

std::string rate(double bytes_per_s) {
  char buf[48];
  if (bytes_per_s >= 1e29) return "free";
  if (bytes_per_s >= 1e12) std::snprintf(buf, sizeof buf, "%.3g TB/s", bytes_per_s / 1e12);
  else if (bytes_per_s >= 1e9) std::snprintf(buf, sizeof buf, "%.3g GB/s", bytes_per_s / 1e9);
  else std::snprintf(buf, sizeof buf, "%.3g MB/s", bytes_per_s / 1e6);
  return buf;
}

std::string describe(const pw::models::Cluster& c) {
  std::ostringstream o;
  const auto& d = c.device();
  o << "cluster " << c.name() << ": " << c.num_devices() << " x " << d.name << " ("
    << pw::tools::human_bytes(static_cast<double>(d.memory_bytes)) << " each";
  if (d.peak_fp32_flops > 0) o << ", " << pw::tools::human_count(d.peak_fp32_flops) << "FLOP/s fp32";
  if (d.peak_bf16_flops > 0) o << ", " << pw::tools::human_count(d.peak_bf16_flops) << "FLOP/s 16-bit";
  o << ")\n";
  for (size_t k = 0; k < c.levels().size(); ++k) {
    const auto& l = c.levels()[k];
    o << "  level " << k << " \"" << l.name << "\": " << l.count << (k == 0 ? " devices" : " groups") << " joined at "
      << rate(l.bandwidth_bytes_per_s) << ", latency " << l.latency_ns << " ns; " << c.group_size(static_cast<int>(k))
      << " devices per group\n";
  }
  return o.str();
}

void list_catalog() {
  // The achieved fractions the cost models apply (models/device.h), where one is published.
  auto achieved = [](double fraction, const std::string& source) {
    return fraction < 1
               ? "; achieved " + std::to_string(static_cast<int>(std::lround(fraction * 100))) + "% (" + source + ")"
               : std::string();
  };
  std::cout << "devices (name, fp32, 16-bit, memory, memory bandwidth, source):\n";
  for (const auto& d : pw::models::device_catalog())
    std::cout << "  " << d.name << "  " << pw::tools::human_count(d.peak_fp32_flops) << "FLOP/s  "
              << pw::tools::human_count(d.peak_bf16_flops) << "FLOP/s  "
              << pw::tools::human_bytes(static_cast<double>(d.memory_bytes)) << "  "
              << rate(d.memory_bandwidth_bytes_per_s) << "  " << d.source
              << achieved(d.memory_efficiency, d.memory_source) << "\n";
  std::cout << "links (name, per direction, latency, source):\n";
  for (const auto& l : pw::models::link_catalog())
    std::cout << "  " << l.name << "  " << rate(l.bandwidth_bytes_per_s) << "  " << l.latency_ns << " ns  " << l.source
              << achieved(l.efficiency, l.efficiency_source) << "\n";
}

pw::models::Cluster this_machine(const ClusterArgs& a) {
#ifdef PW_HAVE_EXEC
  return pw::exec::this_machine_cluster(a.cl.memory);
#else
  throw pw::InputError("--here: this pipewright was built without the executor (hwloc)");
#endif
}

void run(ClusterArgs& a, const CLI::App& sub) {
  const int modes = a.list + a.here + !a.describe.empty();
  if (modes > 1) throw pw::InputError("--list, --here and --describe: give one of them");
  if (modes == 1)  // --here takes --memory (the share of RAM per core is a guess); nothing else builds
    for (const char* flag : {"--device", "--cluster", "--devices", "--devices-per-node", "--intra-node",
                             "--interconnect", "--bandwidth", "--memory", "--levels", "--bandwidths"})
      if (sub.count(flag) > 0 && !(a.here && std::string(flag) == "--memory"))
        throw pw::InputError(std::string(a.list   ? "--list"
                                         : a.here ? "--here"
                                                  : "--describe") +
                             ": does not take " + flag);
  if (a.list) {
    list_catalog();
    return;
  }
  pw::models::Cluster c;
  if (!a.describe.empty()) c = pw::models::load_cluster_file(a.describe);
  else if (a.here) c = this_machine(a);
  else c = pw::tools::build_cluster(a.cl, sub);
  if (a.json) std::cout << pw::Json(c).dump(2) << "\n";
  else std::cout << describe(c);
  if (!a.output.empty()) pw::models::save_cluster_file(a.output, c);
}

pw::tools::CommandRegistrar register_cluster("cluster", [](CLI::App& app) {
  auto a = std::make_shared<ClusterArgs>();
  auto* sub = app.add_subcommand("cluster", "Write or describe a cluster file (devices, levels, links)");
  sub->add_option("--device", a->cl.device, "catalog device or device JSON (see --list)");
  pw::tools::add_cluster_options(sub, a->cl);
  sub->add_flag("--here", a->here, "this machine: its cores grouped as hwloc sees them, copy bandwidth measured");
  sub->add_option("--describe", a->describe, "describe an existing cluster file");
  sub->add_flag("--list", a->list, "list the catalog's devices and links");
  sub->add_flag("--json", a->json, "print the cluster JSON instead of a description");
  sub->add_option("-o,--output", a->output, "write the cluster (pipewright.cluster/1) to this file");
  sub->callback([a, sub] { pw::run_with_output("-o", a->output, [&] { run(*a, *sub); }); });
});

}  // namespace
