#include "tools/mpi_stop.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cstdio>
#include <iostream>
#include <string>

namespace pw::tools {

namespace {

// The parent's descriptor `fd` itself (pidfd_getfd: the same open file, so the same offset as
// mpirun's own writes to a regular file), else the file opened again for appending.
int parent_stream(int pidfd, int fd) {
#if defined(SYS_pidfd_getfd)
  if (pidfd >= 0) {
    const int got = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
    if (got >= 0) return got;
  }
#endif
  const std::string path = "/proc/" + std::to_string(getppid()) + "/fd/" + std::to_string(fd);
  return open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
}

// Waits (at most `limit`) until mpirun has read what this process wrote to the pipe `fd`, so
// that the lines written before come out before those written after (when mpirun still
// forwards them at all).
void wait_drained(int fd, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int pending = 0;
  while (ioctl(fd, FIONREAD, &pending) == 0 && pending > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

}  // namespace

void write_to_launcher_streams() {
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  int pidfd = -1;
#if defined(SYS_pidfd_open)
  pidfd = static_cast<int>(syscall(SYS_pidfd_open, getppid(), 0));
#endif
  for (const int fd : {1, 2}) {
    wait_drained(fd, std::chrono::milliseconds(100));
    const int to = parent_stream(pidfd, fd);
    if (to < 0) continue;
    dup2(to, fd);
    close(to);
  }
  if (pidfd >= 0) close(pidfd);
}

void exit_without_finalize(int code) {
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

}  // namespace pw::tools
