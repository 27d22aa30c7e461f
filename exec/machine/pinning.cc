#include "exec/machine/pinning.h"

#include <hwloc.h>

#include <algorithm>
#include <cstring>

#include "models/error.h"

namespace pw::exec {

std::string CoreSet::to_string() const {
  std::string s = cores.size() == 1 ? "core " : "cores ";
  if (!cores.empty()) {
    const bool contiguous = cores.back() - cores.front() + 1 == static_cast<int>(cores.size());
    if (contiguous && cores.size() > 1) {
      s += std::to_string(cores.front()) + "-" + std::to_string(cores.back());
    } else {
      for (size_t i = 0; i < cores.size(); ++i) s += (i ? "," : "") + std::to_string(cores[i]);
    }
  }
  s += " (socket " + std::to_string(package) + (shared ? ", shared)" : ")");
  return s;
}

std::vector<CoreSet> assign_cores(const std::vector<int>& package_of_core, int num_workers) {
  PW_CHECK(num_workers >= 1, "assign_cores needs at least one worker");
  PW_CHECK(!package_of_core.empty(), "assign_cores needs at least one core");
  // Cores per package, in order of first appearance.
  std::vector<int> packages;
  std::vector<std::vector<int>> cores_of;
  for (int c = 0; c < static_cast<int>(package_of_core.size()); ++c) {
    auto it = std::find(packages.begin(), packages.end(), package_of_core[c]);
    if (it == packages.end()) {
      packages.push_back(package_of_core[c]);
      cores_of.emplace_back();
      it = packages.end() - 1;
    }
    cores_of[it - packages.begin()].push_back(c);
  }
  const int num_cores = static_cast<int>(package_of_core.size());
  const int P = static_cast<int>(packages.size());
  std::vector<CoreSet> out(num_workers);
  if (num_workers < P) {
    // Fewer workers than sockets: worker w takes whole packages [w*P/W, (w+1)*P/W).
    for (int w = 0; w < num_workers; ++w) {
      const int p0 = w * P / num_workers, p1 = (w + 1) * P / num_workers;
      out[w].package = packages[p0];
      for (int p = p0; p < p1; ++p) out[w].cores.insert(out[w].cores.end(), cores_of[p].begin(), cores_of[p].end());
    }
    return out;
  }
  // Workers per package, proportional to the package's cores (largest remainders), >= 1 each.
  std::vector<int> count(P, 1);
  int left = num_workers - P;
  std::vector<double> want(P);
  for (int p = 0; p < P; ++p) want[p] = static_cast<double>(num_workers) * cores_of[p].size() / num_cores - 1.0;
  while (left > 0) {
    int best = 0;
    for (int p = 1; p < P; ++p)
      if (want[p] - (count[p] - 1) > want[best] - (count[best] - 1)) best = p;
    ++count[best];
    --left;
  }
  int w = 0;
  for (int p = 0; p < P; ++p) {
    const auto& cs = cores_of[p];
    const int k = count[p], n = static_cast<int>(cs.size());
    if (k <= n) {
      const int base = n / k, extra = n % k;
      int c = 0;
      for (int i = 0; i < k; ++i, ++w) {
        const int take = base + (i < extra ? 1 : 0);
        out[w].package = packages[p];
        out[w].cores.assign(cs.begin() + c, cs.begin() + c + take);
        c += take;
      }
    } else {
      for (int i = 0; i < k; ++i, ++w) {
        out[w].package = packages[p];
        out[w].cores = {cs[i % n]};
        out[w].shared = true;
      }
    }
  }
  return out;
}

std::string oversubscription_warning(int num_workers, int num_cores) {
  if (num_workers <= num_cores) return "";
  return "warning: " + std::to_string(num_workers) + " stage workers on " + std::to_string(num_cores) +
         " cores: workers share cores, expect a slower run";
}

struct Machine::Impl {
  hwloc_topology_t topo = nullptr;
};

Machine::Machine() : impl_(std::make_unique<Impl>()) {
  if (hwloc_topology_init(&impl_->topo) != 0 || hwloc_topology_load(impl_->topo) != 0)
    throw InputError("hwloc: cannot load the machine topology");
  if (num_cores() < 1) throw InputError("hwloc: the topology has no cores");
}

Machine::Machine(const std::string& synthetic) : impl_(std::make_unique<Impl>()) {
  if (hwloc_topology_init(&impl_->topo) != 0 || hwloc_topology_set_synthetic(impl_->topo, synthetic.c_str()) != 0 ||
      hwloc_topology_load(impl_->topo) != 0)
    throw InputError("hwloc: cannot build the synthetic topology \"" + synthetic + "\"");
  if (num_cores() < 1) throw InputError("hwloc: the synthetic topology \"" + synthetic + "\" has no cores");
}

Machine::~Machine() {
  if (impl_->topo) hwloc_topology_destroy(impl_->topo);
}

int Machine::num_cores() const { return hwloc_get_nbobjs_by_type(impl_->topo, HWLOC_OBJ_CORE); }
int Machine::num_packages() const { return std::max(1, hwloc_get_nbobjs_by_type(impl_->topo, HWLOC_OBJ_PACKAGE)); }
int Machine::num_numa_nodes() const { return std::max(1, hwloc_get_nbobjs_by_type(impl_->topo, HWLOC_OBJ_NUMANODE)); }

std::vector<int> Machine::package_of_core() const {
  std::vector<int> out;
  for (int c = 0; c < num_cores(); ++c) {
    hwloc_obj_t core = hwloc_get_obj_by_type(impl_->topo, HWLOC_OBJ_CORE, c);
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(impl_->topo, HWLOC_OBJ_PACKAGE, core);
    out.push_back(pkg ? static_cast<int>(pkg->logical_index) : 0);
  }
  return out;
}

bool Machine::bind_current_thread(const CoreSet& set, std::string* why) const {
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
  for (int c : set.cores) {
    hwloc_obj_t core = hwloc_get_obj_by_type(impl_->topo, HWLOC_OBJ_CORE, c);
    PW_CHECK(core != nullptr, "core index out of range: " + std::to_string(c));
    hwloc_bitmap_or(cpus, cpus, core->cpuset);
  }
  bool ok = hwloc_set_cpubind(impl_->topo, cpus, HWLOC_CPUBIND_THREAD) == 0;
  if (!ok && why) *why = std::string("hwloc_set_cpubind: ") + std::strerror(errno);
  if (ok && num_numa_nodes() > 1 &&
      hwloc_set_membind(impl_->topo, cpus, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_THREAD) != 0) {
    ok = false;
    if (why) *why = std::string("hwloc_set_membind: ") + std::strerror(errno);
  }
  hwloc_bitmap_free(cpus);
  return ok;
}

std::vector<int> Machine::current_thread_pus() const {
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
  std::vector<int> out;
  if (hwloc_get_cpubind(impl_->topo, cpus, HWLOC_CPUBIND_THREAD) == 0) {
    for (int i = hwloc_bitmap_first(cpus); i >= 0; i = hwloc_bitmap_next(cpus, i)) out.push_back(i);
  }
  hwloc_bitmap_free(cpus);
  return out;
}

const Machine& Machine::instance() {
  static const Machine machine;
  return machine;
}

}  // namespace pw::exec
