#include "tools/cluster_flags.h"

#include <sstream>
#include <vector>

#include "models/device.h"
#include "models/error.h"
#include "tools/model_report.h"

namespace pw::tools {

namespace {

template <class T>
std::vector<T> parse_list(const std::string& s, const std::string& flag) {
  std::vector<T> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    std::istringstream is(item);
    T v{};
    if (!(is >> v) || !is.eof() || !(v > 0))
      throw InputError(flag + ": expected a comma-separated list of positive numbers, got \"" + s + "\"");
    out.push_back(v);
  }
  if (out.empty()) throw InputError(flag + ": expected a non-empty list");
  return out;
}

bool is_accelerator(const models::DeviceSpec& d) { return models::default_dtype(d) == "bf16"; }

}  // namespace

void add_cluster_options(CLI::App* sub, ClusterFlags& f) {
  sub->add_option("--cluster", f.cluster, "a cluster JSON (pipewright.cluster/1; `pipewright cluster` writes one)");
  sub->add_option("--devices", f.devices, "N identical devices (accelerators: in nodes of --devices-per-node)");
  sub->add_option("--devices-per-node", f.devices_per_node, "devices joined by --intra-node")->capture_default_str();
  sub->add_option("--intra-node", f.intra_node, "catalog link inside a node")->capture_default_str();
  sub->add_option("--interconnect", f.interconnect, "catalog link between nodes")->capture_default_str();
  sub->add_option("--bandwidth", f.bandwidth,
                  "one link of this rate (e.g. 10Gbps, 1.25GB/s) instead of the named links; the default for "
                  "devices without catalog links (CPU cores, a profile's own device)")
      ->capture_default_str();
  sub->add_option("--memory", f.memory, "memory per device (e.g. 80GiB; default: the catalog's, else 16GiB)");
  sub->add_option("--levels", f.levels, "devices per level, innermost first (PipeDream's -n), e.g. 4,4");
  sub->add_option("--bandwidths", f.bandwidths, "bytes/s per level, innermost first (PipeDream's -b)");
}

models::Cluster build_cluster(const ClusterFlags& f, const CLI::App& sub) {
  const int forms = !f.cluster.empty() + (f.devices >= 0) + !f.levels.empty();
  if (forms > 1) throw InputError("--cluster, --devices and --levels: give only one of them");
  if (!f.cluster.empty()) {
    for (const char* flag :
         {"--memory", "--intra-node", "--interconnect", "--devices-per-node", "--bandwidth", "--bandwidths"})
      if (sub.count(flag) > 0) throw InputError(std::string(flag) + ": not used with --cluster (the file gives it)");
    return models::load_cluster_file(f.cluster);
  }
  models::DeviceSpec dev;
  if (!f.device.empty()) dev = resolve_device(f.device, "--device");
  else dev.name = "generic";
  if (f.memory > 0) dev.memory_bytes = f.memory;
  else if (dev.memory_bytes <= 0) dev.memory_bytes = int64_t{16} << 30;
  if (!f.levels.empty()) {
    for (const char* flag : {"--intra-node", "--interconnect", "--devices-per-node", "--bandwidth"})
      if (sub.count(flag) > 0)
        throw InputError(std::string(flag) + ": not used with --levels (give each level's rate with --bandwidths)");
    auto counts = parse_list<int>(f.levels, "--levels");
    auto bws = f.bandwidths.empty() ? std::vector<double>(counts.size(), 1e9)
                                    : parse_list<double>(f.bandwidths, "--bandwidths");
    if (bws.size() != counts.size())
      throw InputError("--bandwidths: expected " + std::to_string(counts.size()) + " values, one per --levels entry");
    std::vector<models::Level> lv;
    for (size_t k = 0; k < counts.size(); ++k) lv.push_back({"level" + std::to_string(k), counts[k], bws[k], 0});
    return models::Cluster("levels-" + f.levels, dev, lv);
  }
  const int n = f.devices < 0 ? 1 : f.devices;
  if (n < 1) throw InputError("--devices: expected at least 1 device, got " + std::to_string(n));
  const bool links_given =
      sub.count("--intra-node") + sub.count("--interconnect") + sub.count("--devices-per-node") > 0;
  if (sub.count("--bandwidth") > 0 && links_given)
    throw InputError("--bandwidth and --intra-node/--interconnect/--devices-per-node: give one of them");
  if (sub.count("--bandwidth") == 0 && (is_accelerator(dev) || links_given))
    return models::make_node_cluster(dev, n, f.devices_per_node, models::find_link(f.intra_node),
                                     models::find_link(f.interconnect));
  if (!(f.bandwidth > 0)) throw InputError("--bandwidth: expected a positive number of bytes/s");
  return models::make_flat_cluster(dev, n, f.bandwidth);
}

}  // namespace pw::tools
