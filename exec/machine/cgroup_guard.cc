#include "exec/machine/cgroup_guard.h"

#include <algorithm>

#include "models/human_units.h"

namespace pw::exec {

bool CgroupGuard::admit(int64_t bytes) {
  if (unlimited_.load(std::memory_order_relaxed)) return true;
  std::lock_guard<std::mutex> lock(mu_);
  if (read_once_ && budget_ - bytes >= next_read_) {
    budget_ -= bytes;
    since_read_ += bytes;
    return true;
  }
  const CgroupMemory m = read_();
  if (!read_once_ && m.limit < 0) {
    read_once_ = true;
    unlimited_.store(true, std::memory_order_relaxed);
    return true;
  }
  read_once_ = true;
  limit_ = m.limit;
  budget_ = m.limit < 0 ? INT64_MAX / 2
                        : std::max<int64_t>(m.headroom - cgroup_reserve_bytes(m.limit, processes_) - since_read_, 0);
  next_read_ = budget_ - budget_ / (16 * processes_);
  since_read_ = 0;
  if (bytes > budget_) return false;
  budget_ -= bytes;
  since_read_ = bytes;
  return true;
}

void CgroupGuard::released(int64_t bytes) {
  if (unlimited_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (read_once_) budget_ += bytes;
}

int64_t CgroupGuard::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_;
}

std::string CgroupGuard::refusal() const {
  const int64_t limit = this->limit();
  if (limit < 0) return "";
  return " (its cgroup allows " + models::human_bytes(static_cast<double>(limit)) + ", less " +
         models::human_bytes(static_cast<double>(cgroup_reserve_bytes(limit, processes_))) +
         " kept for memory outside tensors)";
}

void install_cgroup_guard() { Allocator::set_system_gate(&process_cgroup_guard()); }

CgroupGuard& process_cgroup_guard() {
  static CgroupGuard* guard =  // never destroyed: used at exit
      new CgroupGuard(process_cgroup_memory, local_process_count());
  return *guard;
}

}  // namespace pw::exec
