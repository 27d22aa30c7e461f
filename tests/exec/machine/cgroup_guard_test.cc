// The cgroup guard (exec/machine/cgroup_guard.h) over a scripted reader: what it admits, when it
// reads again, what a release gives back; and over a real cgroup, where the kernel kills a
// process past its limit: a child that allocates tensors in a cgroup of 96 MiB gets
// pw::OutOfMemory naming the limit, not SIGKILL (skipped where no cgroup can be made: not root,
// no writable memory controller, or a sanitizer build, whose runtime holds memory of its own).
#include "exec/machine/cgroup_guard.h"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include <string>
#include <vector>

#include "exec/tensor.h"
#include "models/error.h"
#include "tests/exec/machine/test_cgroup.h"

namespace pw::exec {
namespace {

constexpr int64_t kMebibyte = int64_t{1} << 20;

// A reader that returns `headroom` (less what the test says was taken) and counts its calls.
struct Script {
  int64_t limit = 1024 * kMebibyte;
  int64_t headroom = 512 * kMebibyte;
  int reads = 0;
  CgroupMemory read() {
    ++reads;
    return {limit, headroom};
  }
};

TEST_CASE("cgroup guard: admits the headroom less the reserve, reads again only past a sixteenth of it") {
  Script s;
  CgroupGuard g([&s] { return s.read(); });
  const int64_t budget = 512 * kMebibyte - cgroup_reserve_bytes(1024 * kMebibyte, 1);  // 512 - (16 + 32) MiB
  CHECK(budget == 464 * kMebibyte);
  CHECK(g.admit(8 * kMebibyte));
  CHECK(s.reads == 1);
  CHECK(g.limit() == 1024 * kMebibyte);
  CHECK(g.admit(16 * kMebibyte));  // 24 of 464 MiB: below a sixteenth (29 MiB), no new reading
  CHECK(s.reads == 1);
  s.headroom = 100 * kMebibyte;  // another process took memory meanwhile
  // 64 MiB would pass the sixteenth: read, 100 - 48 less the 24 admitted since = 28 MiB left
  CHECK_FALSE(g.admit(40 * kMebibyte));
  CHECK(s.reads == 2);
  CHECK(g.admit(20 * kMebibyte));  // past that reading's sixteenth: read again, 52 MiB, fits
  CHECK(s.reads == 3);
  CHECK_FALSE(g.admit(40 * kMebibyte));  // read: 52 less the 20 admitted since
  CHECK(s.reads == 4);
}

TEST_CASE("cgroup guard: a release is admitted again without a reading, and a full cgroup admits nothing") {
  Script s;
  s.headroom = 48 * kMebibyte + 80 * kMebibyte;  // the reserve (48 MiB at a 1 GiB limit) + 80 MiB
  CgroupGuard g([&s] { return s.read(); });
  CHECK(g.admit(80 * kMebibyte));
  s.headroom = 48 * kMebibyte;  // the cgroup now holds those 80 MiB
  CHECK_FALSE(g.admit(1 * kMebibyte));
  const int reads = s.reads;
  g.released(80 * kMebibyte);
  s.headroom = 0;  // not read again while the released bytes cover the request
  CHECK(g.admit(4 * kMebibyte));
  CHECK(s.reads == reads);
  CgroupGuard full([] { return CgroupMemory{256 * kMebibyte, 0}; });
  CHECK_FALSE(full.admit(1));
}

TEST_CASE("cgroup guard: without a limit at the first reading it admits everything and never reads again") {
  Script s;
  s.limit = -1;
  s.headroom = -1;
  CgroupGuard g([&s] { return s.read(); });
  CHECK(g.admit(int64_t{1} << 40));
  s.limit = 1;
  s.headroom = 0;
  CHECK(g.admit(int64_t{1} << 40));
  g.released(int64_t{1} << 40);
  CHECK(s.reads == 1);
  CHECK(g.limit() == -1);
  CHECK(cgroup_reserve_bytes(0, 1) == 16 * kMebibyte);
  CHECK(cgroup_reserve_bytes(32 * 1024 * kMebibyte, 1) == 16 * kMebibyte + 1024 * kMebibyte);
  CHECK(cgroup_reserve_bytes(32 * 1024 * kMebibyte, 4) == 64 * kMebibyte + 1024 * kMebibyte);
}

TEST_CASE("cgroup guard: processes sharing the cgroup each add to the reserve and read at a smaller step") {
  Script s;  // 1 GiB limit, 512 MiB headroom; 4 processes: 4 x 16 + 32 MiB reserved, 416 MiB left
  CgroupGuard g([&s] { return s.read(); }, 4);
  CHECK(g.admit(4 * kMebibyte));
  CHECK(g.admit(2 * kMebibyte));  // 6 of 416 MiB: within the step of 416 / 64 = 6.5 MiB
  CHECK(s.reads == 1);
  CHECK(g.admit(1 * kMebibyte));  // 7 MiB would pass it: read again, 416 less the 6 admitted since
  CHECK(s.reads == 2);
  CHECK_FALSE(g.admit(416 * kMebibyte));  // read: 416 less the 1 admitted since
  CHECK(g.refusal() == " (its cgroup allows 1.00 GiB, less 96.00 MiB kept for memory outside tensors)");
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);
  CHECK(local_process_count() == 3);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "three", 1);
  CHECK(local_process_count() == 1);
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

TEST_CASE("cgroup guard: in a real cgroup of 96 MiB, tensors past its limit are OutOfMemory, not SIGKILL") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  MESSAGE("SKIPPED: a sanitizer's runtime holds memory outside the allocator");
#else
  const test::TestCgroup cgroup(96 * kMebibyte);
  if (!cgroup.ok()) {
    MESSAGE("SKIPPED: no memory cgroup can be made here (" << cgroup.why() << ")");
    return;
  }
  int status = 0;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!test::TestCgroup::write(cgroup.procs_file(), std::to_string(::getpid()))) ::_exit(10);
    install_cgroup_guard();  // as the commands do
    // 8 MiB tensors, each written through, up to twice the limit: the guard must refuse one.
    std::vector<Tensor> held;
    try {
      for (int i = 0; i < 24; ++i) {
        held.emplace_back(std::vector<int64_t>{2 * 1024 * 1024});
        held.back().fill(1.0f);
      }
    } catch (const OutOfMemory& e) {
      ::_exit(std::string(e.what()).find("its cgroup allows 96.00 MiB") != std::string::npos ? 0 : 11);
    }
    ::_exit(12);  // 192 MiB held in a 96 MiB cgroup: the limit was not applied
  }
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("child status " << status << std::string(WIFSIGNALED(status) ? " (killed by a signal)" : ""));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
#endif
}

}  // namespace
}  // namespace pw::exec
