// CLI tests of output files (models/output_set.h, tools/signals.h): every output path is
// checked before any work; when one output fails, none is left; only regular files are
// replaced; no temporary file survives a signal, the second SIGTERM of a stopping run included.
//
// The signal tests hold the child in a write to its stdout, a one-page pipe that the test does
// not read: the commands write their files to temporaries before printing their report and
// rename them after it, so the temporaries exist while the child waits there. Waits are on
// events (the child's kernel wait channel, a pending signal, exit), never on time.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "tests/tools/cli_runner.h"

using pw::test::expect_rejected;
using pw::test::run_cli;
using pw::test::ScratchDir;
using pw::test::slurp;
using Names = std::vector<std::string>;

namespace {

std::vector<char*> argv_of(std::vector<std::string>& argv_s) {
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

// `pipewright args...` with stdout to a one-page pipe that the test does not read, stderr to a
// file, every signal at its default disposition.
class BlockedChild {
 public:
  BlockedChild(const std::vector<std::string>& args, const std::string& err_file) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    ::fcntl(fds[1], F_SETPIPE_SZ, 4096);
    REQUIRE(::fcntl(fds[1], F_GETPIPE_SZ) == 4096);
    std::vector<std::string> argv_s = {PW_CLI_PATH};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv = argv_of(argv_s);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t all;
    sigfillset(&all);
    posix_spawnattr_setsigdefault(&attr, &all);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    REQUIRE(posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), environ) == 0);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    read_fd_ = fds[0];
  }
  ~BlockedChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    close_pipe();
  }
  void wait_until_blocked_writing() { pw::test::wait_until_blocked_writing(pid_, "stdout"); }
  void wait_until_delivered(int sig) { pw::test::wait_until_delivered(pid_, sig); }
  void signal(int sig) { ::kill(pid_, sig); }
  void close_pipe() {
    if (read_fd_ >= 0) ::close(read_fd_);
    read_fd_ = -1;
  }
  // The wait status.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int read_fd_ = -1;
};

// The names in `dir` are all temporaries of the outputs `names` (".<name>.tmp..."), one each.
void expect_temporaries_of(const ScratchDir& dir, const Names& names) {
  const Names e = dir.entries();
  CAPTURE(e);
  REQUIRE(e.size() == names.size());
  for (const std::string& n : names)
    CHECK(std::count_if(e.begin(), e.end(), [&](const std::string& x) { return x.rfind("." + n + ".tmp", 0) == 0; }) ==
          1);
}

// `pipewright args...` with the file size limit `max_file_bytes` (RLIMIT_FSIZE); SIGXFSZ ignored
// (a write past the limit fails with EFBIG) or at its default (the process is killed by it).
pw::test::CliResult run_with_file_limit(const std::vector<std::string>& args, rlim_t max_file_bytes, bool ignore_xfsz,
                                        const ScratchDir& io) {
  std::vector<std::string> argv_s = {PW_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv = argv_of(argv_s);
  const std::string out = io.file("stdout"), err = io.file("stderr");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(120);
    const struct rlimit lim { max_file_bytes, max_file_bytes };
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(121);
    ::signal(SIGXFSZ, ignore_xfsz ? SIG_IGN : SIG_DFL);
    ::execv(argv[0], argv.data());
    ::_exit(122);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  pw::test::CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

const std::vector<std::string> kUniform = {"simulate", "--uniform", "--stages", "4",     "--micro-batches",
                                           "8",        "--t-f",     "1",        "--t-b", "2"};

std::vector<std::string> outputs_uniform(std::vector<std::string> extra) {
  std::vector<std::string> a = kUniform;
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST_CASE("simulate: a bad --svg path leaves no --trace file: refused before any work") {
  ScratchDir dir;
  expect_rejected(run_cli(outputs_uniform({"--trace", dir.file("t.json"), "--svg", "/nonexistent/x.svg"})), 2,
                  {"--svg /nonexistent/x.svg: directory /nonexistent does not exist"}, &dir);
  expect_rejected(run_cli(outputs_uniform({"--trace", dir.file("t.json"), "--svg", dir.file("t.json")})), 2,
                  {"--svg " + dir.file("t.json") + ": also the output of --trace"}, &dir);
}

TEST_CASE("simulate: an output that fails while written (file size limit) takes the others with it") {
  ScratchDir dir, io;
  // Sizes of the two files, written in full without a limit.
  REQUIRE(run_cli(outputs_uniform({"--trace", dir.file("t.json"), "--svg", dir.file("t.svg")})).rc == 0);
  const auto trace_bytes = std::filesystem::file_size(dir.file("t.json"));
  const auto svg_bytes = std::filesystem::file_size(dir.file("t.svg"));
  REQUIRE(trace_bytes < svg_bytes);  // the trace is written first: with a limit between, it fits
  std::filesystem::remove(dir.file("t.json"));
  std::filesystem::remove(dir.file("t.svg"));
  const rlim_t limit = (trace_bytes + svg_bytes) / 2;
  expect_rejected(run_with_file_limit(outputs_uniform({"--trace", dir.file("t.json"), "--svg", dir.file("t.svg")}),
                                      limit, true, io),
                  2, {"--svg " + dir.file("t.svg") + ": write failed"}, &dir);
  // SIGXFSZ at its default: the process is killed by it, and its handler removed the temporaries.
  const pw::test::CliResult killed = run_with_file_limit(
      outputs_uniform({"--trace", dir.file("t.json"), "--svg", dir.file("t.svg")}), limit, false, io);
  CHECK(killed.rc == 128 + SIGXFSZ);
  CHECK(dir.entries().empty());
}

TEST_CASE("schedule import -o: a bad output leaves no other") {
  ScratchDir in, dir;
  REQUIRE(run_cli({"schedule", "export", "--stages", "2", "--micro-batches", "4", "-o", in.file("s.csv")}).rc == 0);
  expect_rejected(run_cli({"schedule", "import", in.file("s.csv"), "--trace", dir.file("t.json"), "--svg",
                           dir.file("t.svg"), "-o", "/nonexistent/s.json"}),
                  2, {"-o /nonexistent/s.json: directory /nonexistent does not exist"}, &dir);
  // And all three are written when all can be.
  REQUIRE(run_cli({"schedule", "import", in.file("s.csv"), "--trace", dir.file("t.json"), "--svg", dir.file("t.svg"),
                   "-o", dir.file("s.json")})
              .rc == 0);
  CHECK(dir.entries() == Names{"s.json", "t.json", "t.svg"});
}

TEST_CASE("-o onto a FIFO, a symbolic link, a directory or a device: refused, nothing replaced") {
  ScratchDir dir;
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
  { std::ofstream(dir.file("real.json")) << "keep"; }
  std::filesystem::create_symlink(dir.file("real.json"), dir.file("link.json"));
  std::filesystem::create_directory(dir.file("sub"));
  const Names before = {"fifo", "link.json", "real.json", "sub"};
  expect_rejected(run_cli({"model", "mlp", "-o", dir.file("fifo")}), 2,
                  {"-o " + dir.file("fifo") + ": is a FIFO, not a regular file"}, &dir, before);
  expect_rejected(run_cli({"model", "mlp", "-o", dir.file("link.json")}), 2,
                  {"-o " + dir.file("link.json") + ": is a symbolic link, not a regular file"}, &dir, before);
  expect_rejected(run_cli({"model", "mlp", "-o", dir.file("sub")}), 2, {"is a directory, not a regular file"}, &dir,
                  before);
  CHECK(std::filesystem::is_fifo(dir.file("fifo")));
  CHECK(std::filesystem::is_symlink(dir.file("link.json")));
  CHECK(slurp(dir.file("real.json")) == "keep");
  // A device: one made here when root may make one, else the machine's /dev/null (only root
  // could replace it, and then the node in the scratch folder is what the test uses).
  std::string device = "/dev/null";
  if (::geteuid() == 0 && ::mknod(dir.file("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
    device = dir.file("null");
  expect_rejected(run_cli({"schedule", "export", "--stages", "2", "--micro-batches", "2", "-o", device}), 2,
                  {"-o " + device + ": is a character device, not a regular file"});
  struct stat st {};
  REQUIRE(::lstat(device.c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  // /dev/stdout is a symbolic link; "-" is standard output.
  expect_rejected(run_cli({"schedule", "export", "--stages", "2", "--micro-batches", "2", "-o", "/dev/stdout"}), 2,
                  {"-o /dev/stdout: is a symbolic link", "- writes to standard output"});
  const pw::test::CliResult dash = run_cli({"schedule", "export", "--stages", "2", "--micro-batches", "2", "-o", "-"});
  CHECK(dash.rc == 0);
  CHECK(dash.out == run_cli({"schedule", "export", "--stages", "2", "--micro-batches", "2"}).out);
  // A regular file is replaced.
  REQUIRE(run_cli({"model", "mlp", "-o", dir.file("real.json")}).rc == 0);
  CHECK(slurp(dir.file("real.json")).find("pipewright.model/1") != std::string::npos);
}

TEST_CASE("simulate: SIGTERM, SIGINT, SIGHUP or a closed stdout while the outputs are temporaries: none left") {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) {
    CAPTURE(sig);
    ScratchDir dir, io;
    // 200 stages: the report is longer than the pipe's page.
    BlockedChild child({"simulate", "--uniform", "--stages", "200", "--micro-batches", "4", "--t-f", "1", "--t-b", "2",
                        "--trace", dir.file("t.json"), "--svg", dir.file("t.svg")},
                       io.file("stderr"));
    child.wait_until_blocked_writing();
    expect_temporaries_of(dir, {"t.json", "t.svg"});
    if (sig == SIGPIPE) child.close_pipe();  // the blocked write fails: SIGPIPE
    else child.signal(sig);
    const int status = child.wait();
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(dir.entries().empty());
  }
}

#ifdef PW_HAVE_EXEC
TEST_CASE("run: bad output paths and --checkpoint are refused before training") {
  ScratchDir dir;
  const std::vector<std::string> quick = {"run", "--model",         "mlp", "--width",   "32", "--stages",
                                          "2",   "--micro-batches", "4",   "--threads", "1",  "--steps",
                                          "3"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = quick;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // One line: no banner, no step lines, nothing written.
  expect_rejected(
      run_cli(with({"--trace", dir.file("t.json"), "--run-trace", dir.file("r.json"), "--svg", "/nonexistent/x.svg"})),
      2, {"--svg /nonexistent/x.svg: directory /nonexistent does not exist"}, &dir);
  { std::ofstream(dir.file("afile")) << "x"; }
  expect_rejected(run_cli(with({"--trace", dir.file("t.json"), "--checkpoint", dir.file("afile")})), 2,
                  {"--checkpoint " + dir.file("afile") + ": exists and is not a directory"}, &dir, {"afile"});
  expect_rejected(run_cli(with({"--checkpoint", dir.file("afile/ck")})), 2,
                  {"--checkpoint " + dir.file("afile/ck") + ": a component of the path is not a directory"}, &dir,
                  {"afile"});
  expect_rejected(
      run_cli({"train", "--model", "mlp", "--steps", "3", "--threads", "1", "--checkpoint", dir.file("afile")}), 2,
      {"--checkpoint " + dir.file("afile") + ": exists and is not a directory"}, &dir, {"afile"});
  CHECK(slurp(dir.file("afile")) == "x");
}

// The first SIGTERM arrives after the training, while the summary is being printed (the files
// are temporaries then); the second ends the process at once, and takes the temporaries along.
TEST_CASE("run: a second SIGTERM while the outputs are temporaries leaves none") {
  ScratchDir dir, io;
  BlockedChild child(
      {"run",   "--model",         "mlp",         "--width",         "32",  "--stages", "2",       "--micro-batches",
       "4",     "--threads",       "1",           "--steps",         "300", "--json",   "--trace", dir.file("t.json"),
       "--svg", dir.file("t.svg"), "--run-trace", dir.file("r.json")},
      io.file("stderr"));
  child.wait_until_blocked_writing();
  expect_temporaries_of(dir, {"t.json", "t.svg", "r.json"});
  child.signal(SIGTERM);
  child.wait_until_delivered(SIGTERM);
  child.signal(SIGTERM);
  const int status = child.wait();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 143);
  CHECK(dir.entries().empty());
}
#endif
