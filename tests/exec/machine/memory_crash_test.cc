// memory_crash (exec/machine/memory_crash.h): a null access within reach of the data limit is
// one out-of-memory line and exit 3; any other crash still kills the process with its signal.
// Each case runs in a forked child. Not in sanitized builds: their own SIGSEGV handler reports
// the crash, and their shadow memory cannot start under a data limit.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <string>

#include "exec/machine/memory.h"
#include "exec/machine/memory_crash.h"

namespace {

struct Child {
  int status = 0;
  std::string err;
};

// Runs `crash` in a child with the handler installed (and, with `limit_slack` >= 0, RLIMIT_DATA
// set to its VmData plus that much), its stderr captured.
template <class F>
Child run_child(int64_t limit_slack, F crash) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    std::signal(SIGSEGV, SIG_DFL);  // doctest's crash report is not the child's previous handler
    std::signal(SIGBUS, SIG_DFL);
    pw::exec::install_memory_crash_line("pw-test: ");
    if (limit_slack >= 0) {
      const int64_t used = pw::exec::self_status_bytes("VmData:");
      const rlim_t limit = static_cast<rlim_t>(used + limit_slack);
      const struct rlimit rl { limit, limit };
      if (used < 0 || ::setrlimit(RLIMIT_DATA, &rl) != 0) ::_exit(100);
    }
    crash();
    ::_exit(101);  // the crash did not happen
  }
  ::close(fds[1]);
  Child c;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) c.err.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  REQUIRE(::waitpid(pid, &c.status, 0) == pid);
  return c;
}

void null_write() {
  volatile int* volatile p = nullptr;
  *p = 1;
}

}  // namespace

TEST_CASE("memory crash line: a null access near the data limit is one line and exit 3, others keep their signal") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  MESSAGE("skipped in a sanitized build (its own SIGSEGV handler reports the crash)");
#else
  // Near the limit (4 MiB of room, the handler's threshold is 64 MiB): the out-of-memory line.
  const Child near = run_child(int64_t{4} << 20, null_write);
  REQUIRE(WIFEXITED(near.status));
  CHECK(WEXITSTATUS(near.status) == 3);
  CHECK(near.err.rfind("pw-test: infeasible: host: out of memory: crashed on a null access with ", 0) == 0);
  CHECK(near.err.find(" MiB left under ulimit -d (a library's unchecked allocation); give it more memory\n") !=
        std::string::npos);
  CHECK(near.err.find('\n') == near.err.size() - 1);  // one line
  // No limit: the crash is a crash (killed by SIGSEGV), nothing printed.
  const Child free_run = run_child(-1, null_write);
  REQUIRE(WIFSIGNALED(free_run.status));
  CHECK(WTERMSIG(free_run.status) == SIGSEGV);
  CHECK(free_run.err.empty());
  // Near the limit but not a null access (a page mapped without access): a crash too.
  const Child wild = run_child(int64_t{4} << 20, [] {
    void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) ::_exit(102);
    volatile int* volatile p = static_cast<int*>(page);
    *p = 1;
  });
  REQUIRE(WIFSIGNALED(wild.status));
  CHECK(WTERMSIG(wild.status) == SIGSEGV);
  // A SIGSEGV sent, not raised by a fault (kill -SEGV), is not taken for one.
  const Child sent = run_child(int64_t{4} << 20, [] { ::kill(::getpid(), SIGSEGV); });
  REQUIRE(WIFSIGNALED(sent.status));
  CHECK(WTERMSIG(sent.status) == SIGSEGV);
#endif
}
