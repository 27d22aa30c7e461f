// CLI tests of checkpoint / resume and signals (`train`, `run`): SIGKILL at a random step of a
// 200-step run, then --resume, equals the uninterrupted run bitwise; SIGTERM finishes the step,
// writes the checkpoint, trace, SVG and JSON of the steps done and exits 143; checkpoints of
// another run or corrupt ones are one-line errors; a NaN exits 4 naming step, stage and layer.
//
// Determinism without timing: the child's stderr is a pipe shrunk to one page that the test
// reads byte by byte, so the child can run at most a page of progress lines (< 90 steps) ahead
// of the line after which the test signals it; waits are on events (a line, EOF, exit) only.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>

#include <random>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;
using pw::test::slurp;

namespace {

// `pipewright args...` with stdout to a file and stderr to a one-page pipe read by the test.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& stdout_file) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    ::fcntl(fds[0], F_SETPIPE_SZ, 4096);
    capacity_ = ::fcntl(fds[0], F_GETPIPE_SZ);
    REQUIRE(capacity_ == 4096);
    std::vector<std::string> argv_s = {PW_CLI_PATH};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    REQUIRE(posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  // The next stderr line (without '\n'); false at EOF. A generous limit guards against a hang.
  bool read_line(std::string* line) {
    while (true) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        *line = buf_.substr(0, nl);
        err_ += buf_.substr(0, nl + 1);
        buf_.erase(0, nl + 1);
        return true;
      }
      pollfd p{fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, 300000);
      REQUIRE_MESSAGE(rc > 0, "no output from the child for 300 s");
      // One byte at a time: nothing past the line is taken out of the pipe, so the child stays
      // at most one pipe page ahead of the line the test acts on.
      char chunk[1];
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) {
        if (!buf_.empty()) {
          *line = buf_;
          err_ += buf_;
          buf_.clear();
          return true;
        }
        return false;
      }
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
  // Reads lines until one starts with `prefix`; false at EOF.
  bool wait_for(const std::string& prefix) {
    std::string line;
    while (read_line(&line))
      if (line.rfind(prefix, 0) == 0) return true;
    return false;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  void wait_until_blocked_writing() { pw::test::wait_until_blocked_writing(pid_, "stderr"); }
  void wait_until_delivered(int sig) { pw::test::wait_until_delivered(pid_, sig); }
  // Drains stderr to EOF and returns the exit code (128 + signal when killed).
  int wait() {
    std::string line;
    while (read_line(&line)) {}
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& err() const { return err_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  int capacity_ = 0;
  std::string buf_, err_;
};

int random_step(int lo, int hi) {
  static std::mt19937 gen{std::random_device{}()};
  return std::uniform_int_distribution<int>(lo, hi)(gen);
}

std::vector<double> losses(const std::string& json_text) {
  return Json::parse(json_text).at("losses").get<std::vector<double>>();
}

// SIGKILL after a random step r in [21, 100] of a 200-step run (checkpoints every 20), then
// --resume: the losses from the checkpoint on and the final checkpoint equal the full run's.
void kill_and_resume(const std::vector<std::string>& args, const std::vector<std::string>& stage_files) {
  ScratchDir dir;
  std::vector<std::string> full_args = args;
  full_args.insert(full_args.end(), {"--steps", "200", "--checkpoint-every", "20", "--json", "--checkpoint"});
  std::vector<std::string> a = full_args;
  a.push_back(dir.file("full"));
  const CliResult full = run_cli(a);
  CAPTURE(full.err);
  REQUIRE(full.rc == 0);
  const std::vector<double> full_losses = losses(full.out);
  REQUIRE(full_losses.size() == 200);

  const int r = random_step(21, 100);
  CAPTURE(r);
  a = full_args;
  a.push_back(dir.file("part"));
  {
    Child child(a, dir.file("part.out"));
    REQUIRE(child.wait_for("step " + std::to_string(r) + "/200"));
    child.signal(SIGKILL);
    CHECK(child.wait() == 128 + SIGKILL);
  }
  a.insert(a.end(), {"--resume", dir.file("part")});
  const CliResult rest = run_cli(a);
  CAPTURE(rest.err);
  REQUIRE(rest.rc == 0);
  const Json j = Json::parse(rest.out);
  const int first = j.at("first_step").get<int>();
  CHECK(first % 20 == 0);
  CHECK(first >= 20);
  CHECK(first <= r + 90);
  const std::vector<double> rest_losses = j.at("losses").get<std::vector<double>>();
  REQUIRE(rest_losses.size() == static_cast<size_t>(200 - first));
  for (size_t i = 0; i < rest_losses.size(); ++i) CHECK(rest_losses[i] == full_losses[first + i]);  // bitwise
  for (const std::string& f : stage_files) {
    CAPTURE(f);
    REQUIRE(dir.exists("full/" + f));
    CHECK(slurp(dir.file("part/" + f)) == slurp(dir.file("full/" + f)));
  }
}

TEST_CASE("train: SIGKILL at a random step of 200, --resume: losses and final weights bitwise identical") {
  kill_and_resume({"train", "--model", "mlp", "--threads", "1", "--log-every", "1"}, {"stage-0.step-200.bin"});
}

TEST_CASE("run (2 threaded stages): SIGKILL at a random step of 200, --resume: bitwise identical") {
  kill_and_resume({"run", "--model", "mlp", "--width", "32", "--stages", "2", "--micro-batches", "4", "--threads", "1",
                   "--optimizer", "adam", "--lr", "0.003", "--log-every", "1"},
                  {"stage-0.step-200.bin", "stage-1.step-200.bin"});
}

TEST_CASE("run: SIGTERM finishes the step, writes checkpoint, trace, SVG and JSON of the steps done, exits 143") {
  ScratchDir dir;
  const int r = random_step(3, 60);
  CAPTURE(r);
  Child child({"run",
               "--model",
               "mlp",
               "--width",
               "32",
               "--stages",
               "2",
               "--micro-batches",
               "4",
               "--threads",
               "1",
               "--steps",
               "200",
               "--log-every",
               "1",
               "--checkpoint",
               dir.file("ck"),
               "--checkpoint-every",
               "50",
               "--trace",
               dir.file("t.json"),
               "--svg",
               dir.file("t.svg"),
               "--json"},
              dir.file("out.json"));
  REQUIRE(child.wait_for("step " + std::to_string(r) + "/200"));
  child.signal(SIGTERM);
  CHECK(child.wait() == 143);
  CAPTURE(child.err());
  const std::string err = child.err();
  const std::string last = err.substr(err.rfind('\n', err.size() - 2) + 1);
  CHECK(last.find("stopped by SIGTERM") != std::string::npos);
  CHECK(last.find("checkpoint: " + dir.file("ck")) != std::string::npos);
  const Json j = Json::parse(slurp(dir.file("out.json")));
  const int done = j.at("completed_steps").get<int>();
  CHECK(done >= r);
  CHECK(done < 200);
  CHECK(j.at("stopped") == true);
  CHECK(j.at("losses").size() == static_cast<size_t>(done));
  CHECK(j.at("checkpoint").at("step") == done);
  const Json m = Json::parse(slurp(dir.file("ck/manifest.json")));
  CHECK(m.at("step") == done);
  const Json t = Json::parse(slurp(dir.file("t.json")));
  CHECK(t.at("traceEvents").size() > 0);
  CHECK(slurp(dir.file("t.svg")).find("</svg>") != std::string::npos);
  CHECK(dir.entries() == std::vector<std::string>{"ck", "out.json", "t.json", "t.svg"});
  std::vector<std::string> ck;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("ck"))) ck.push_back(e.path().filename().string());
  std::sort(ck.begin(), ck.end());
  CHECK(ck == std::vector<std::string>{"manifest.json", "stage-0.step-" + std::to_string(done) + ".bin",
                                       "stage-1.step-" + std::to_string(done) + ".bin"});
}

TEST_CASE("train: SIGINT exits 130 with the summary of the steps done") {
  ScratchDir dir;
  Child child({"train", "--model", "mlp", "--threads", "1", "--steps", "100000", "--log-every", "1", "--json",
               "--checkpoint", dir.file("ck")},
              dir.file("out.json"));
  REQUIRE(child.wait_for("step 5/100000"));
  child.signal(SIGINT);
  CHECK(child.wait() == 130);
  const Json j = Json::parse(slurp(dir.file("out.json")));
  CHECK(j.at("completed_steps").get<int>() >= 5);
  CHECK(j.at("checkpoint").at("step") == j.at("completed_steps"));
  CHECK(child.err().find("stopped by SIGINT after step " + std::to_string(j.at("completed_steps").get<int>())) !=
        std::string::npos);
}

// The child is held in a progress-line write (its stderr pipe is full and the test does not
// read), after a step and before it polls the stop flag: the first SIGTERM only sets the flag
// (its handler runs, the write goes on waiting), the second must end the process there,
// before any summary or checkpoint is written.
TEST_CASE("train: a second signal exits at once, without the summary") {
  ScratchDir dir;
  Child child({"train", "--model", "mlp", "--threads", "1", "--steps", "100000", "--log-every", "1", "--json",
               "--checkpoint", dir.file("ck")},
              dir.file("out.json"));
  REQUIRE(child.wait_for("step 1/100000"));
  child.wait_until_blocked_writing();
  child.signal(SIGTERM);
  child.wait_until_delivered(SIGTERM);
  child.signal(SIGTERM);
  CHECK(child.wait() == 143);
  CHECK(slurp(dir.file("out.json")).empty());
  CHECK(child.err().find("stopped by") == std::string::npos);
  CHECK_FALSE(dir.exists("ck"));
}

TEST_CASE("resume: another model or plan, a truncated or corrupt checkpoint: exit 2, one line") {
  ScratchDir dir;
  const std::vector<std::string> run = {"run", "--model", "mlp", "--micro-batches", "2", "--threads", "1"};
  auto with = [&](std::vector<std::string> extra, const std::string& width = "32") {
    std::vector<std::string> a = run;
    a.insert(a.end(), {"--width", width});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  REQUIRE(run_cli(with({"--stages", "2", "--steps", "3", "--checkpoint", dir.file("ck")})).rc == 0);
  pw::test::expect_rejected(run_cli(with({"--stages", "3", "--steps", "5", "--resume", dir.file("ck")})), 2,
                            {"--resume " + dir.file("ck"), "layout/stages"});
  pw::test::expect_rejected(run_cli(with({"--stages", "2", "--steps", "5", "--resume", dir.file("ck")}, "64")), 2,
                            {"model/hash"});
  pw::test::expect_rejected(run_cli(with({"--stages", "2", "--steps", "5", "--lr", "0.5", "--resume", dir.file("ck")})),
                            2, {"options/lr"});
  pw::test::expect_rejected(run_cli({"train", "--model", "mlp", "--steps", "5", "--resume", dir.file("ck")}), 2,
                            {"the checkpoint is of another run"});
  const std::string blob = dir.file("ck/stage-1.step-3.bin");
  const std::string good = slurp(blob);
  std::ofstream(blob, std::ios::binary | std::ios::trunc) << good.substr(0, good.size() / 2);
  pw::test::expect_rejected(run_cli(with({"--stages", "2", "--steps", "5", "--resume", dir.file("ck")})), 2,
                            {"stage-1.step-3.bin", "truncated"});
  std::string bad = good;
  bad[100] ^= 0x01;  // inside the first weight tensor's values
  std::ofstream(blob, std::ios::binary | std::ios::trunc) << bad;
  pw::test::expect_rejected(run_cli(with({"--stages", "2", "--steps", "5", "--resume", dir.file("ck")})), 2,
                            {"checksum mismatch"});
}

TEST_CASE("train: a NaN exits 4 naming step, stage and layer, and keeps the last good checkpoint") {
  ScratchDir dir;
  const CliResult r = run_cli({"train", "--model", "mlp", "--threads", "1", "--optimizer", "sgd", "--lr", "1e4",
                               "--steps", "200", "--checkpoint", dir.file("ck"), "--checkpoint-every", "1"});
  CAPTURE(r.err);
  CHECK(r.rc == 4);
  const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  CHECK(last.find("pipewright: numerical fault: step ") == 0);
  CHECK(last.find(", stage 0, layer \"") != std::string::npos);
  const int step = std::stoi(last.substr(last.find("step ") + 5));
  REQUIRE(step >= 2);
  CHECK(last.find("last good checkpoint: " + dir.file("ck") + " (step " + std::to_string(step - 1) + ")") !=
        std::string::npos);
  CHECK(Json::parse(slurp(dir.file("ck/manifest.json"))).at("step") == step - 1);
}

}  // namespace
