// OutputSet (all-or-nothing outputs, only regular files replaced) and the temporary-file table
// that signal handlers sweep.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/error.h"
#include "models/json_util.h"
#include "models/output_set.h"
#include "models/temp_registry.h"

using pw::InputError;
using pw::OutputSet;

namespace {

namespace fs = std::filesystem;

class Dir {
 public:
  Dir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("pw_output_set_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

std::string slurp(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("OutputSet: nothing is in place before commit, everything after") {
  Dir d;
  {
    OutputSet set;
    set.add("--a", d.file("a.json"));
    set.add("--b", d.file("b.svg"));
    pw::write_file_atomic(d.file("a.json"), "A");
    pw::save_json_file(d.file("b.svg"), pw::Json{{"k", 1}});
    const Names during = d.entries();
    REQUIRE(during.size() == 2);
    for (const std::string& n : during) CHECK(n.find(".tmp") != std::string::npos);
    set.commit();
  }
  CHECK(d.entries() == Names{"a.json", "b.svg"});
  CHECK(slurp(d.file("a.json")) == "A");
  CHECK(slurp(d.file("b.svg")) == "{\n  \"k\": 1\n}\n");
}

TEST_CASE("OutputSet: without commit (an exception) no file is left and old files stay") {
  Dir d;
  { std::ofstream(d.file("old.json")) << "old"; }
  try {
    OutputSet set;
    set.add("--a", d.file("old.json"));
    set.add("--b", d.file("new.json"));
    pw::write_file_atomic(d.file("old.json"), "replaced");
    pw::write_file_atomic(d.file("new.json"), "new");
    throw InputError("a later output failed");
  } catch (const InputError&) {}
  CHECK(d.entries() == Names{"old.json"});
  CHECK(slurp(d.file("old.json")) == "old");
}

TEST_CASE("OutputSet: bad paths are refused when registered, naming the flag") {
  Dir d;
  OutputSet set;
  CHECK_THROWS_WITH_AS(set.add("--svg", "/nonexistent-pw-dir/x.svg"),
                       "--svg /nonexistent-pw-dir/x.svg: directory /nonexistent-pw-dir does not exist", InputError);
  { std::ofstream(d.file("afile")) << "x"; }
  CHECK_THROWS_WITH_AS(set.add("-o", d.file("afile/x.json")), doctest::Contains("is not a directory"), InputError);
  fs::create_directory(d.file("sub"));
  CHECK_THROWS_WITH_AS(set.add("-o", d.file("sub")), doctest::Contains("is a directory, not a regular file"),
                       InputError);
  CHECK_THROWS_WITH_AS(set.add("-o", d.file("sub/")), doctest::Contains("names a directory"), InputError);
  REQUIRE(::mkfifo(d.file("fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(set.add("-o", d.file("fifo")), doctest::Contains("is a FIFO, not a regular file"), InputError);
  fs::create_symlink(d.file("afile"), d.file("link"));
  CHECK_THROWS_WITH_AS(set.add("-o", d.file("link")), doctest::Contains("is a symbolic link"), InputError);
  CHECK_THROWS_WITH_AS(set.add("-o", "/dev/null"),
                       "-o /dev/null: is a character device, not a regular file: "
                       "refusing to replace it (only regular files are replaced; - writes to standard output)",
                       InputError);
  CHECK_THROWS_WITH_AS(set.add("-o", d.file(std::string(240, 'n'))), doctest::Contains("file name too long"),
                       InputError);
  set.add("--trace", d.file("t.json"));
  CHECK_THROWS_WITH_AS(set.add("--svg", d.file("t.json")), doctest::Contains("also the output of --trace"), InputError);
  set.add("--trace-out", "-");
  CHECK_THROWS_WITH_AS(set.add("-o", "-"), "-o -: --trace-out already writes to standard output", InputError);
  CHECK(d.entries() == Names{"afile", "fifo", "link", "sub"});
}

TEST_CASE("write_file_atomic outside a set: regular files only, at once") {
  Dir d;
  { std::ofstream(d.file("real")) << "keep"; }
  fs::create_symlink(d.file("real"), d.file("link"));
  CHECK_THROWS_WITH_AS(pw::write_file_atomic(d.file("link"), "x"), doctest::Contains("is a symbolic link"), InputError);
  CHECK(fs::is_symlink(d.file("link")));
  CHECK(slurp(d.file("real")) == "keep");
  pw::write_file_atomic(d.file("real"), "new");
  CHECK(slurp(d.file("real")) == "new");
  CHECK(d.entries() == Names{"link", "real"});
}

TEST_CASE("check_output_directory: a directory or one that can be created") {
  Dir d;
  pw::check_output_directory("--checkpoint", d.file("new/deeper"));
  { std::ofstream(d.file("afile")) << "x"; }
  CHECK_THROWS_WITH_AS(pw::check_output_directory("--checkpoint", d.file("afile")),
                       doctest::Contains("exists and is not a directory"), InputError);
  CHECK_THROWS_WITH_AS(pw::check_output_directory("--checkpoint", d.file("afile/ck")),
                       doctest::Contains("not a directory"), InputError);
  CHECK(d.entries() == Names{"afile"});
}

TEST_CASE("temp registry: a handler's sweep removes every live temporary") {
  Dir d;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // as a signal handler would, in a process that then ends
    OutputSet set;
    set.add("-o", d.file("a.json"));
    pw::write_file_atomic(d.file("a.json"), "A");
    const pw::TempFile loose = pw::create_temp_file(d.file("b.bin"));
    const bool ok = pw::claim_for_signal(SIGTERM);
    pw::remove_temp_files();
    ::_exit(ok && loose.fd >= 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(d.entries().empty());
}

namespace {
volatile std::sig_atomic_t g_seen = 0;
extern "C" void record_signal(int sig) { g_seen = sig; }
}  // namespace

TEST_CASE("temp registry: a signal during a commit waits for the end of it") {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  REQUIRE(::sigaction(SIGUSR1, &sa, &old) == 0);
  g_seen = 0;
  pw::begin_commit();
  CHECK_FALSE(pw::claim_for_signal(SIGUSR1));  // deferred
  CHECK(g_seen == 0);
  pw::end_commit();  // raised again now
  CHECK(g_seen == SIGUSR1);
  ::sigaction(SIGUSR1, &old, nullptr);
}
