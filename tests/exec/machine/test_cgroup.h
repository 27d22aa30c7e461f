// A memory cgroup with a limit, made for one test below this process's own memory cgroup (v1's
// memory controller; v2: a child where this cgroup enables memory for its children, else a
// sibling) and removed on destruction. Making one needs root and a writable cgroup file system: where it cannot be
// made, ok() is false and why() says why, for the test's SKIPPED line. Not thread-safe; the cgroup must hold no process
// when it is destroyed (children that joined it have been waited for).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "exec/machine/memory.h"

namespace pw::test {

class TestCgroup {
 public:
  explicit TestCgroup(int64_t limit_bytes) {
    const std::string parent = own_memory_cgroup();
    if (parent.empty()) {
      why_ = "no memory cgroup controller this process could make a child in";
      return;
    }
    static std::atomic<int> counter{0};
    const std::string dir = parent + "/pw-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    if (::mkdir(dir.c_str(), 0755) != 0) {
      why_ = dir + ": " + std::strerror(errno);
      return;
    }
    dir_ = dir;
    const bool v1 = parent.rfind("/sys/fs/cgroup/memory", 0) == 0;
    if (!write(dir_ + (v1 ? "/memory.limit_in_bytes" : "/memory.max"), std::to_string(limit_bytes)))
      why_ = dir_ + ": the limit cannot be set";
  }
  ~TestCgroup() {
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  bool ok() const { return !dir_.empty() && why_.empty(); }
  const std::string& why() const { return why_; }
  // The file a process writes its pid into to join the cgroup.
  std::string procs_file() const { return dir_ + "/cgroup.procs"; }

  static bool write(const std::string& file, const std::string& text) {
    std::ofstream out(file);
    out << text;
    out.flush();
    return static_cast<bool>(out);
  }

 private:
  // This process's memory cgroup directory, "" when there is none to make a child in.
  static std::string own_memory_cgroup() {
    std::ifstream in("/proc/self/cgroup");
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& [v2, mount, path] : exec::memory_cgroups(text.str(), "/sys/fs/cgroup")) {
      const std::string own = mount + (path == "/" ? std::string() : path);
      if (!v2) return own;
      // v2: a child of this cgroup where it enables memory for its children; else, as a cgroup
      // that holds processes cannot (no internal processes), a sibling, where the parent does.
      if (lists_memory(own + "/cgroup.subtree_control")) return own;
      if (path != "/" && lists_memory(own + "/cgroup.controllers")) return own.substr(0, own.find_last_of('/'));
    }
    return "";
  }

  static bool lists_memory(const std::string& file) {
    std::ifstream in(file);
    for (std::string word; in >> word;)
      if (word == "memory") return true;
    return false;
  }

  std::string dir_, why_;
};

}  // namespace pw::test
