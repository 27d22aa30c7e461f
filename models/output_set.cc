#include "models/output_set.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "models/error.h"
#include "models/error_text.h"
#include "models/temp_registry.h"

namespace pw {
namespace {

namespace fs = std::filesystem;

std::atomic<OutputSet*> g_current{nullptr};

// Room a temporary's name needs beyond the target's: "." + ".tmp" + pid + "-" + counter.
constexpr size_t kTempNameExtra = 32;
constexpr size_t kMaxNameBytes = 255;

std::string at(const std::string& flag, const std::string& path) {
  return (flag.empty() ? "" : flag + " ") + escape_for_message(path, 200) + ": ";
}

std::string dir_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

// "a FIFO", "a directory", ... for a file type that is not a regular file.
const char* kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

// The target itself, before its directory: absent, or a regular file. Returns whether it exists.
bool check_target_type(const std::string& flag, const std::string& path, struct stat* st) {
  if (::lstat(path.c_str(), st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return false;  // the directory check says why
    throw InputError(at(flag, path) + "cannot inspect it (" + std::strerror(err) + ")");
  }
  if (!S_ISREG(st->st_mode))
    throw InputError(at(flag, path) + "is " + kind_of(st->st_mode) +
                     ", not a regular file: refusing to replace it (only regular files are replaced; - writes to "
                     "standard output)");
  return true;
}

// The directory an output goes into: exists, is a directory, searchable and writable.
struct stat check_dir(const std::string& flag, const std::string& path, const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT)
      throw InputError(at(flag, path) + "directory " + escape_for_message(dir, 200) + " does not exist");
    if (err == ENOTDIR)
      throw InputError(at(flag, path) + "a component of " + escape_for_message(dir, 200) + " is not a directory");
    throw InputError(at(flag, path) + "cannot reach directory " + escape_for_message(dir, 200) + " (" +
                     std::strerror(err) + ")");
  }
  if (!S_ISDIR(st.st_mode)) throw InputError(at(flag, path) + escape_for_message(dir, 200) + " is not a directory");
  if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    const int err = errno;
    throw InputError(at(flag, path) + "directory " + escape_for_message(dir, 200) + " is not writable (" +
                     std::strerror(err) + ")");
  }
  return st;
}

std::string key_of(const std::string& path) {
  if (path == "-") return path;
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  return (ec ? fs::path(path) : abs).lexically_normal().string();
}

// Writes `content` into a new temporary beside `target`, fsynced, mode 0644; returns its name.
std::string stage(const std::string& flag, const std::string& target, std::string_view content) {
  const TempFile t = create_temp_file(target);
  const auto fail = [&](const char* what) {
    const int err = errno;
    ::close(t.fd);
    unlink_temp_file(t.name);
    throw InputError(at(flag, target) + what + " (" + std::strerror(err) + ")");
  };
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(t.fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write failed");
    done += static_cast<size_t>(n);
  }
  if (::fchmod(t.fd, 0644) != 0 || ::fsync(t.fd) != 0) fail("write failed");
  if (::close(t.fd) != 0) {
    const int err = errno;
    unlink_temp_file(t.name);
    throw InputError(at(flag, target) + "write failed (" + std::strerror(err) + ")");
  }
  return t.name;
}

void print_to_stdout(std::string_view content) {
  std::cout << content;
  std::cout.flush();
}

}  // namespace

void check_output_file(const std::string& flag, const std::string& path) {
  if (path.empty()) throw InputError(flag + ": expected a file name, got an empty one");
  if (path == "-") return;
  const fs::path p(path);
  const std::string name = p.filename().string();
  if (path.back() == '/' || name.empty() || name == "." || name == "..")
    throw InputError(at(flag, path) + "names a directory, expected a file");
  if (name.size() + kTempNameExtra > kMaxNameBytes)
    throw InputError(at(flag, path) + "file name too long (" + std::to_string(name.size()) + " bytes; at most " +
                     std::to_string(kMaxNameBytes - kTempNameExtra) + ")");
  struct stat st {};
  const bool exists = check_target_type(flag, path, &st);
  const struct stat dir_st = check_dir(flag, path, dir_of(path));
  const uid_t me = ::geteuid();
  if (exists && (dir_st.st_mode & S_ISVTX) && me != 0 && st.st_uid != me && dir_st.st_uid != me)
    throw InputError(at(flag, path) + "belongs to another user in a sticky directory: cannot replace it");
}

void check_output_directory(const std::string& flag, const std::string& dir) {
  if (dir.empty()) throw InputError(flag + ": expected a directory, got an empty name");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw InputError(at(flag, dir) + "exists and is not a directory");
    if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
      const int err = errno;
      throw InputError(at(flag, dir) + "directory not writable (" + std::strerror(err) + ")");
    }
    return;
  }
  const int err = errno;
  if (err == ENOTDIR) throw InputError(at(flag, dir) + "a component of the path is not a directory");
  if (err != ENOENT) throw InputError(at(flag, dir) + "cannot inspect it (" + std::strerror(err) + ")");
  // Absent: it is created with its missing parents, under the nearest existing ancestor.
  fs::path up = fs::path(dir).lexically_normal();
  for (;;) {
    fs::path parent = up.parent_path();
    if (parent.empty()) parent = ".";
    if (parent == up) break;  // "/" and "." exist: not reached
    up = parent;
    if (::stat(up.c_str(), &st) == 0) break;
    const int up_err = errno;
    if (up_err == ENOTDIR) throw InputError(at(flag, dir) + "a component of the path is not a directory");
    if (up_err != ENOENT)
      throw InputError(at(flag, dir) + "cannot inspect " + escape_for_message(up.string(), 200) + " (" +
                       std::strerror(up_err) + ")");
  }
  if (!S_ISDIR(st.st_mode))
    throw InputError(at(flag, dir) + "cannot create it: " + escape_for_message(up.string(), 200) +
                     " is not a directory");
  if (::faccessat(AT_FDCWD, up.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    const int up_err = errno;
    throw InputError(at(flag, dir) + "cannot create it: " + escape_for_message(up.string(), 200) +
                     " is not writable (" + std::strerror(up_err) + ")");
  }
}

OutputSet::OutputSet() {
  OutputSet* expected = nullptr;
  if (!g_current.compare_exchange_strong(expected, this)) throw InternalError("two OutputSets alive at once");
}

OutputSet::~OutputSet() {
  for (const Entry& e : entries_)
    if (!e.temp.empty()) unlink_temp_file(e.temp);
  g_current.store(nullptr);
}

OutputSet* OutputSet::current() { return g_current.load(); }

OutputSet::Entry* OutputSet::find(const std::string& path) {
  const std::string key = key_of(path);
  for (Entry& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

const OutputSet::Entry* OutputSet::find(const std::string& path) const {
  return const_cast<OutputSet*>(this)->find(path);
}

void OutputSet::add(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  check_output_file(flag, path);
  std::lock_guard<std::mutex> lock(mu_);
  if (const Entry* e = find(path)) {
    if (path == "-") throw InputError(flag + " -: " + e->flag + " already writes to standard output");
    throw InputError(at(flag, path) + "also the output of " + e->flag);
  }
  entries_.push_back(Entry{flag, path, key_of(path), "", "", false});
}

bool OutputSet::holds(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find(path) != nullptr;
}

void OutputSet::write(const std::string& path, std::string_view content) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = find(path);
  PW_CHECK(e != nullptr, "write of an output not registered: " + path);
  PW_CHECK(!committed_, "write after commit: " + path);
  if (e->path == "-") {
    e->buffered.assign(content);
  } else {
    const std::string temp = stage(e->flag, e->path, content);
    if (!e->temp.empty()) unlink_temp_file(e->temp);
    e->temp = temp;
  }
  e->written = true;
}

void OutputSet::commit() {
  std::lock_guard<std::mutex> lock(mu_);
  PW_CHECK(!committed_, "OutputSet committed twice");
  for (const Entry& e : entries_)
    if (!e.temp.empty()) check_output_file(e.flag, e.path);  // changed since add()?
  begin_commit();
  for (Entry& e : entries_) {
    if (e.temp.empty()) continue;
    if (std::rename(e.temp.c_str(), e.path.c_str()) != 0) {
      const int err = errno;
      end_commit();
      throw InputError(at(e.flag, e.path) + "cannot rename the temporary file into place (" + std::strerror(err) + ")");
    }
    release_temp_file(e.temp);
    e.temp.clear();
  }
  committed_ = true;
  end_commit();
  for (const Entry& e : entries_)
    if (e.path == "-" && e.written) print_to_stdout(e.buffered);
}

void write_output(const std::string& file, std::string_view content) {
  OutputSet* set = OutputSet::current();
  if (set != nullptr && set->holds(file)) return set->write(file, content);
  if (file == "-") return print_to_stdout(content);
  check_output_file("", file);
  const std::string temp = stage("", file, content);
  begin_commit();
  if (std::rename(temp.c_str(), file.c_str()) != 0) {
    const int err = errno;
    end_commit();
    unlink_temp_file(temp);
    throw InputError(at("", file) + "cannot rename the temporary file into place (" + std::strerror(err) + ")");
  }
  release_temp_file(temp);
  end_commit();
}

void run_with_output(const std::string& flag, const std::string& path, const std::function<void()>& work) {
  OutputSet outputs;
  outputs.add(flag, path);
  work();
  outputs.commit();
}

}  // namespace pw
