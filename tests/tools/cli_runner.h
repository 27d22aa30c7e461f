// Helpers for CLI tests: run the built `pipewright` (PW_CLI_PATH, set by tests/tools/CMakeLists.txt)
// with arguments, capturing exit code, stdout and stderr; and a scratch directory per test.
// Not thread-safe (tests run one case at a time per process).
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#ifndef PW_CLI_PATH
#error "PW_CLI_PATH must name the pipewright executable"
#endif

extern char** environ;

namespace pw::test {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("pw_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `content` to `name` and returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream(file(name), std::ios::binary) << content;
    return file(name);
  }
  bool exists(const std::string& name) const { return std::filesystem::exists(path_ / name); }
  // Names of the entries in the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};

// Runs the program argv_s[0] (a path) with its arguments; stdout and stderr go through files in a
// scratch directory. With `cwd`, it runs in that directory.
inline CliResult run_program(std::vector<std::string> argv_s, const std::string& cwd = "") {
  ScratchDir io;
  const std::string out = io.file("stdout"), err = io.file("stderr");
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid = 0;
  CliResult r;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&fa);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// Runs `pipewright args...` (run_program). With `cwd`, the command runs in that directory (relative
// paths in args resolve there).
inline CliResult run_cli(const std::vector<std::string>& args, const std::string& cwd = "") {
  std::vector<std::string> argv_s = {PW_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  return run_program(std::move(argv_s), cwd);
}

// Sanitizer builds reserve terabytes of shadow memory, which a data limit forbids: tests of
// run_cli_with_data_limit skip there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// Runs `pipewright args...` under `ulimit -d data_kib` (RLIMIT_DATA: the data, heap and private
// mappings the process may hold), through /bin/sh.
inline CliResult run_cli_with_data_limit(long data_kib, const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {"/bin/sh", "-c",
                                     "ulimit -d " + std::to_string(data_kib) + " && exec \"$0\" \"$@\"", PW_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  return run_program(std::move(argv_s));
}

// Lines in `s` (a final line without '\n' counts).
inline int line_count(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n + (!s.empty() && s.back() != '\n');
}

// A command rejected as bad input (or infeasible) must: exit with `rc`, print one line on
// stderr containing every needle, print nothing on stdout, and leave `dir` (when given) holding
// exactly `keep`: no output file, partial or temporary.
inline void expect_rejected(const CliResult& r, int rc, const std::vector<std::string>& needles,
                            const ScratchDir* dir = nullptr, const std::vector<std::string>& keep = {}) {
  CAPTURE(r.err);
  CHECK(r.rc == rc);
  CHECK(line_count(r.err) == 1);
  for (const std::string& n : needles) {
    CAPTURE(n);
    CHECK(r.err.find(n) != std::string::npos);
  }
  CHECK(r.out.empty());
  if (dir != nullptr) CHECK(dir->entries() == keep);
}

// Waits (polling every millisecond, at most 300 s) until process `pid`'s main thread sleeps in a
// pipe write (a pipe of its, `which` in the failure message, is full and stays so until the test
// reads it).
inline void wait_until_blocked_writing(pid_t pid, const char* which) {
  for (int i = 0; i < 300000; ++i) {
    std::ifstream wchan("/proc/" + std::to_string(pid) + "/wchan");
    std::string where;
    std::getline(wchan, where);
    if (where.find("pipe_write") != std::string::npos) return;
    ::usleep(1000);
  }
  FAIL("the child did not block on its " << which << " pipe within 300 s");
}

// Waits (as above) until `sig` is no longer pending for process `pid`: its handler has run.
// (Two signals sent back to back while the first is pending merge into one.)
inline void wait_until_delivered(pid_t pid, int sig) {
  const unsigned long long bit = 1ull << (sig - 1);
  for (int i = 0; i < 300000; ++i) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    unsigned long long pending = 0;
    while (std::getline(status, line))
      if (line.rfind("ShdPnd:", 0) == 0 || line.rfind("SigPnd:", 0) == 0)
        pending |= std::stoull(line.substr(7), nullptr, 16);
    if ((pending & bit) == 0) return;
    ::usleep(1000);
  }
  FAIL("signal " << sig << " still pending after 300 s");
}

}  // namespace pw::test
