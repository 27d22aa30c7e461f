#include "exec/machine/memory.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/human_units.h"

namespace pw::exec {
namespace {

// A cgroup file's one number; -1 for "max", v1's "unlimited" (LONG_MAX rounded to a page) or a
// file that is missing or holds something else.
int64_t read_cgroup_bytes(const std::string& file) {
  std::ifstream in(file);
  std::string word;
  if (!(in >> word) || word.empty() || word.find_first_not_of("0123456789") != std::string::npos || word.size() > 19)
    return -1;
  const unsigned long long v = std::stoull(word);
  return v >= (1ull << 62) ? -1 : static_cast<int64_t>(v);
}

// `path` ("/a/b") and each ancestor ("/a", "/").
std::vector<std::string> with_ancestors(std::string path) {
  if (path.empty() || path.front() != '/') path = "/" + path;
  std::vector<std::string> levels;
  while (true) {
    levels.push_back(path);
    if (path == "/") break;
    const size_t cut = path.find_last_of('/');
    path = cut == 0 ? "/" : path.substr(0, cut);
  }
  return levels;
}

// The "Key:  N kB" line of a /proc file (/proc/self/status, /proc/meminfo), as bytes; -1 where it
// is missing.
int64_t proc_kib_line_bytes(const char* file, const char* key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string k, unit;
    int64_t kib = 0;
    if (fields >> k >> kib >> unit && k == key && unit == "kB") return kib * 1024;
  }
  return -1;
}

// The page cache a cgroup holds that the kernel reclaims before it kills anything: the file
// pages on its LRU lists less those dirty or under writeback (a checkpoint being saved), from
// memory.stat (v2: active_file + inactive_file - file_dirty - file_writeback; v1 with hierarchy:
// the total_ counterparts, as usage_in_bytes covers the children). Shared memory is on the
// anonymous lists and counts as held. 0 when the file is missing.
int64_t reclaimable_file_bytes(const std::string& stat_file, bool v2) {
  std::ifstream in(stat_file);
  std::string key;
  int64_t value = 0, lists = 0, busy = 0;
  const std::string p = v2 ? "" : "total_";
  while (in >> key >> value) {
    if (key == p + "active_file" || key == p + "inactive_file") lists += std::max<int64_t>(value, 0);
    if (key == (v2 ? "file_dirty" : "total_dirty") || key == (v2 ? "file_writeback" : "total_writeback"))
      busy += std::max<int64_t>(value, 0);
  }
  return std::max<int64_t>(lists - busy, 0);
}

// A /proc file's text (read_input_file of models/ refuses them: they report a size of 0).
std::string read_proc_file(const char* file) {
  std::ifstream in(file);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The least of the bounds offered to it (-1: none from that source).
class Least {
 public:
  void offer(int64_t bytes, MemoryBound::Source source) {
    if (bytes < 0 || (known_ && bytes >= bound_.bytes)) return;
    known_ = true;
    bound_ = {bytes, source};
  }
  MemoryBound result() const { return known_ ? bound_ : MemoryBound{}; }

 private:
  bool known_ = false;
  MemoryBound bound_;
};

// Offers the cgroups' and the rlimits' bounds: the cgroups' headroom, less the reserve the host
// allocator keeps below it (cgroup_reserve_bytes) with `reserve`.
void offer_process_limits(Least& least, bool reserve) {
  const CgroupMemory cg = process_cgroup_memory();
  if (!reserve) least.offer(cg.headroom, MemoryBound::Source::cgroup_left);
  else if (cg.headroom >= 0)
    least.offer(std::max<int64_t>(cg.headroom - cgroup_reserve_bytes(cg.limit, local_process_count()), 0),
                MemoryBound::Source::cgroup_left);
  least.offer(rlimit_headroom(RLIMIT_AS, "VmSize:"), MemoryBound::Source::address_space);
  least.offer(rlimit_headroom(RLIMIT_DATA, "VmData:"), MemoryBound::Source::data);
}

}  // namespace

int64_t self_status_bytes(const char* key) {
  char buf[8192];
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = 0;
  for (ssize_t n; len + 1 < sizeof buf && (n = ::read(fd, buf + len, sizeof buf - 1 - len)) > 0;)
    len += static_cast<size_t>(n);
  ::close(fd);
  buf[len] = '\0';
  const size_t key_len = std::strlen(key);
  for (const char* line = buf; *line;) {
    if (std::strncmp(line, key, key_len) == 0) {
      const char* at = line + key_len;
      while (*at == ' ' || *at == '\t') ++at;
      int64_t kib = 0;
      while (*at >= '0' && *at <= '9') kib = kib * 10 + (*at++ - '0');
      return kib * 1024;
    }
    const char* next = std::strchr(line, '\n');
    if (!next) break;
    line = next + 1;
  }
  return -1;
}

int64_t rlimit_headroom(int resource, const char* status_key) {
  struct rlimit rl {};
  if (::getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return -1;
  const int64_t used = std::max<int64_t>(self_status_bytes(status_key), 0);
  const int64_t limit = rl.rlim_cur >= (1ull << 62) ? int64_t{1} << 62 : static_cast<int64_t>(rl.rlim_cur);
  return std::max<int64_t>(limit - used, 0);
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

CgroupMemory process_cgroup_memory() { return cgroup_memory(read_proc_file("/proc/self/cgroup"), "/sys/fs/cgroup"); }

int64_t cgroup_reserve_bytes(int64_t limit, int processes) {
  return (int64_t{16} << 20) * std::max(processes, 1) + std::max<int64_t>(limit, 0) / 32;
}

int local_process_count() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 1 && n <= 4096) return static_cast<int>(n);
  }
  return 1;
}

std::vector<MemoryCgroup> memory_cgroups(const std::string& proc_cgroup, const std::string& root) {
  std::vector<MemoryCgroup> found;
  std::istringstream lines(proc_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    // hierarchy-id:controllers:path; v2 is "0::path", v1's memory line lists "memory".
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    const bool v2 = id == "0" && controllers.empty();
    const bool v1 = ("," + controllers + ",").find(",memory,") != std::string::npos;
    if (v2 || v1) found.push_back({v2, v2 ? root : root + "/memory", path});
  }
  return found;
}

CgroupMemory cgroup_memory(const std::string& proc_cgroup, const std::string& root) {
  CgroupMemory m;
  for (const auto& [v2, mount, path] : memory_cgroups(proc_cgroup, root)) {
    for (const std::string& level : with_ancestors(path)) {
      const std::string at = mount + (level == "/" ? "" : level) + "/";
      const int64_t limit = read_cgroup_bytes(at + (v2 ? "memory.max" : "memory.limit_in_bytes"));
      if (limit < 0) continue;
      const int64_t usage = read_cgroup_bytes(at + (v2 ? "memory.current" : "memory.usage_in_bytes"));
      const int64_t held = std::max<int64_t>(usage, 0) - reclaimable_file_bytes(at + "memory.stat", v2);
      const int64_t headroom = std::max<int64_t>(limit - std::max<int64_t>(held, 0), 0);
      m.limit = m.limit < 0 ? limit : std::min(m.limit, limit);
      m.headroom = m.headroom < 0 ? headroom : std::min(m.headroom, headroom);
    }
  }
  return m;
}

MemoryBound memory_bound() {
  Least least;
  least.offer(physical_memory_bytes() > 0 ? physical_memory_bytes() : -1, MemoryBound::Source::machine);
  offer_process_limits(least, true);
  return least.result();
}

MemoryBound host_memory_bound() {
  Least least;
  least.offer(physical_memory_bytes() > 0 ? physical_memory_bytes() : -1, MemoryBound::Source::machine);
  least.offer(process_cgroup_memory().limit, MemoryBound::Source::cgroup);
  return least.result();
}

int64_t available_memory_bytes() {
  int64_t available = proc_kib_line_bytes("/proc/meminfo", "MemAvailable:");
  if (available < 0) available = physical_memory_bytes() > 0 ? physical_memory_bytes() : -1;
  Least least;
  least.offer(available, MemoryBound::Source::machine);
  offer_process_limits(least, false);
  return least.result().bytes;
}

std::string describe(const MemoryBound& bound, int decimals) {
  const std::string gib = models::gib_text(static_cast<double>(bound.bytes), decimals);
  switch (bound.source) {
    case MemoryBound::Source::machine: return "this machine's " + gib + " of memory";
    case MemoryBound::Source::cgroup:
      return "the " + gib + " its cgroup allows (a container's or a job's memory limit)";
    case MemoryBound::Source::cgroup_left:
      return "the " + gib + " its cgroup still allows (a container's or a job's memory limit)";
    case MemoryBound::Source::address_space: return "the " + gib + " this process may still map under ulimit -v";
    case MemoryBound::Source::data: return "the " + gib + " this process may still map under ulimit -d";
  }
  return gib;
}

}  // namespace pw::exec
