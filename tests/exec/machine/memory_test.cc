// The memory bounds of exec/machine/memory.h: cgroup limits read from a cgroup file tree built in
// a scratch directory (v2 and v1, nested, unlimited, missing), and this process's own bound.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "exec/machine/memory.h"
#include "tests/exec/data/sample_files.h"

namespace pw::exec {
namespace {

// A cgroup file system in a scratch directory (removed on destruction).
class FakeCgroups {
 public:
  // Writes `text` into root/dir/file.
  void write(const std::string& dir, const std::string& file, const std::string& text) const {
    std::filesystem::create_directories(dir_.file(dir));
    dir_.write(dir + "/" + file, text + "\n");
  }
  std::string root() const { return dir_.file(""); }

 private:
  test::SampleFilesDir dir_;
};

constexpr int64_t kMiB = int64_t{1} << 20;

}  // namespace

TEST_CASE("cgroup_memory v2: the least limit and the least headroom over the cgroup and its ancestors") {
  FakeCgroups fs;
  fs.write("job", "memory.max", std::to_string(8 * 1024 * kMiB));
  fs.write("job", "memory.current", std::to_string(1024 * kMiB));
  fs.write("job/step", "memory.max", "max");  // no limit of its own: the parent's holds
  fs.write("job/step", "memory.current", std::to_string(512 * kMiB));
  fs.write("job/step/task", "memory.max", std::to_string(4 * 1024 * kMiB));
  fs.write("job/step/task", "memory.current", std::to_string(3900 * kMiB));
  const CgroupMemory m = cgroup_memory("0::/job/step/task\n", fs.root());
  CHECK(m.limit == 4 * 1024 * kMiB);
  CHECK(m.headroom == 196 * kMiB);  // 4096 - 3900 MiB below the task's limit; the job has 7 GiB
  const CgroupMemory step = cgroup_memory("0::/job/step\n", fs.root());
  CHECK(step.limit == 8 * 1024 * kMiB);
  CHECK(step.headroom == 7 * 1024 * kMiB);
}

TEST_CASE("cgroup_memory v1: the memory controller's line, its unlimited value, a limit at the root") {
  FakeCgroups fs;
  const std::string proc = "9:name=systemd:/\n4:cpuacct,memory:/process_api/abc\n1:cpu:/other\n0::/\n";
  fs.write("memory/process_api/abc", "memory.limit_in_bytes", "9223372036854771712");  // unlimited
  fs.write("memory/process_api/abc", "memory.usage_in_bytes", "1000");
  CHECK(cgroup_memory(proc, fs.root()).limit == -1);
  CHECK(cgroup_memory(proc, fs.root()).headroom == -1);
  fs.write("memory", "memory.limit_in_bytes", std::to_string(2 * 1024 * kMiB));  // the mount's own cgroup
  fs.write("memory", "memory.usage_in_bytes", std::to_string(1536 * kMiB));
  const CgroupMemory m = cgroup_memory(proc, fs.root());
  CHECK(m.limit == 2 * 1024 * kMiB);
  CHECK(m.headroom == 512 * kMiB);
}

TEST_CASE(
    "cgroup_memory: no memory line, no files or garbage in them give no limit, usage past the limit no headroom") {
  FakeCgroups fs;
  CHECK(cgroup_memory("", fs.root()).limit == -1);
  CHECK(cgroup_memory("3:cpuset:/x\nnot a line\n", fs.root()).limit == -1);
  CHECK(cgroup_memory("0::/missing\n", fs.root()).limit == -1);
  fs.write("bad", "memory.max", "-5");
  fs.write("huge", "memory.max", "123456789012345678901234567890");
  CHECK(cgroup_memory("0::/bad\n", fs.root()).limit == -1);
  CHECK(cgroup_memory("0::/huge\n", fs.root()).limit == -1);
  fs.write("full", "memory.max", std::to_string(100 * kMiB));
  fs.write("full", "memory.current", std::to_string(101 * kMiB));
  const CgroupMemory full = cgroup_memory("0::/full\n", fs.root());
  CHECK(full.limit == 100 * kMiB);
  CHECK(full.headroom == 0);
}

TEST_CASE(
    "cgroup_memory: clean page cache on the file lists is not held, dirty pages, shared memory and the rest are") {
  FakeCgroups fs;
  // v2: 900 MiB used, of which 300 MiB file pages the kernel would reclaim first.
  fs.write("job", "memory.max", std::to_string(1024 * kMiB));
  fs.write("job", "memory.current", std::to_string(900 * kMiB));
  fs.write("job", "memory.stat",
           "anon " + std::to_string(500 * kMiB) + "\nfile " + std::to_string(400 * kMiB) + "\nshmem " +
               std::to_string(100 * kMiB) + "\nactive_file " + std::to_string(200 * kMiB) + "\ninactive_file " +
               std::to_string(100 * kMiB) + "\nfile_dirty " + std::to_string(30 * kMiB) + "\nfile_writeback " +
               std::to_string(20 * kMiB));
  CHECK(cgroup_memory("0::/job\n", fs.root()).headroom == 374 * kMiB);  // 1024 - (900 - (300 - 50))
  // v1: the hierarchical totals, not the cgroup's own lists.
  fs.write("memory/a", "memory.limit_in_bytes", std::to_string(1024 * kMiB));
  fs.write("memory/a", "memory.usage_in_bytes", std::to_string(1000 * kMiB));
  fs.write("memory/a", "memory.stat",
           "cache " + std::to_string(600 * kMiB) + "\nactive_file 1\ninactive_file 1\ntotal_active_file " +
               std::to_string(250 * kMiB) + "\ntotal_inactive_file " + std::to_string(250 * kMiB));
  CHECK(cgroup_memory("4:memory:/a\n", fs.root()).headroom == 524 * kMiB);  // 1024 - (1000 - 500)
  // Without memory.stat every byte used counts as held.
  fs.write("memory/b", "memory.limit_in_bytes", std::to_string(1024 * kMiB));
  fs.write("memory/b", "memory.usage_in_bytes", std::to_string(1000 * kMiB));
  CHECK(cgroup_memory("4:memory:/b\n", fs.root()).headroom == 24 * kMiB);
}

TEST_CASE("memory_bound: this process's bound is at most the machine's memory and is described in words") {
  const MemoryBound b = memory_bound();
  REQUIRE(b.bytes > 0);  // Linux: at least physical memory can be read
  CHECK(b.bytes <= physical_memory_bytes());
  CHECK(available_memory_bytes() > 0);
  CHECK(available_memory_bytes() <= physical_memory_bytes());
  CHECK(describe({2 * 1024 * kMiB, MemoryBound::Source::machine}) == "this machine's 2.0 GiB of memory");
  CHECK(describe({512 * kMiB, MemoryBound::Source::data}) == "the 0.5 GiB this process may still map under ulimit -d");
  CHECK(describe({512 * kMiB, MemoryBound::Source::data}, 2) ==
        "the 0.50 GiB this process may still map under ulimit -d");
  CHECK(describe({8 * 1024 * kMiB, MemoryBound::Source::cgroup}).find("its cgroup allows") != std::string::npos);
  CHECK(describe({8 * 1024 * kMiB, MemoryBound::Source::cgroup_left}) ==
        "the 8.0 GiB its cgroup still allows (a container's or a job's memory limit)");
}

}  // namespace pw::exec
