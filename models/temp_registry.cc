#include "models/temp_registry.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "models/error.h"
#include "models/error_text.h"

namespace pw {
namespace {

enum SlotState : int { kFree = 0, kReserved = 1, kLive = 2 };
enum Phase : int { kIdle = 0, kCommitting = 1, kClaimed = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[kMaxTempPath];
};

static_assert(std::atomic<int>::is_always_lock_free, "the table is read by signal handlers");

Slot g_slots[kMaxTempFiles];
std::atomic<int> g_phase{kIdle};
std::atomic<int> g_deferred{0};
std::atomic<int> g_creating{0};  // create_temp_file calls between publishing a name and knowing its fate
std::atomic<unsigned> g_counter{0};

extern "C" void remove_at_exit() { remove_temp_files(); }

Slot* reserve_slot() {
  for (Slot& s : g_slots) {
    int expected = kFree;
    if (s.state.compare_exchange_strong(expected, kReserved)) return &s;
  }
  throw InternalError("more than " + std::to_string(kMaxTempFiles) + " temporary files alive at once");
}

Slot* find_live(const std::string& name) {
  for (Slot& s : g_slots)
    if (s.state.load() == kLive && name == s.path) return &s;
  return nullptr;
}

[[noreturn]] void wait_for_the_end() {
  for (;;) ::pause();  // a signal handler has claimed the process and is ending it
}

}  // namespace

TempFile create_temp_file(const std::string& target) {
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(remove_at_exit); });  // std::exit skips destructors
  namespace fs = std::filesystem;
  const fs::path t(target);
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  const std::string stem = (dir / ("." + t.filename().string() + ".tmp" + std::to_string(::getpid()) + "-")).string();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = stem + std::to_string(g_counter.fetch_add(1));
    if (name.size() >= kMaxTempPath)
      throw InputError(escape_for_message(target) + ": path too long (" + std::to_string(name.size()) + " bytes)");
    Slot* s = reserve_slot();
    std::memcpy(s->path, name.c_str(), name.size() + 1);
    g_creating.fetch_add(1);
    s->state.store(kLive);  // named in the table before the file exists
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const int err = errno;
    if (g_phase.load() == kClaimed) {  // a handler on another thread may have swept already
      if (fd >= 0) ::unlink(name.c_str());
      wait_for_the_end();
    }
    g_creating.fetch_sub(1);
    if (fd >= 0) return TempFile{fd, name};
    s->state.store(kFree);
    if (err != EEXIST)
      throw InputError(escape_for_message(target) + ": cannot create a file in " + escape_for_message(dir.string()) +
                       " (" + std::strerror(err) + ")");
  }
  throw InputError(escape_for_message(target) + ": cannot create a temporary file beside it (names taken)");
}

void release_temp_file(const std::string& name) {
  if (Slot* s = find_live(name)) s->state.store(kFree);
}

void unlink_temp_file(const std::string& name) {
  ::unlink(name.c_str());
  release_temp_file(name);
}

void remove_temp_files() noexcept {
  if (g_phase.load() == kCommitting) return;
  // A creation on another thread finishes in a few instructions; on this thread (the handler
  // interrupted it) it cannot, and the bound ends the wait.
  for (int spin = 0; spin < 10000000 && g_creating.load() != 0; ++spin) {}
  for (Slot& s : g_slots)
    if (s.state.load() == kLive) ::unlink(s.path);
}

bool claim_for_signal(int sig) noexcept {
  int expected = kIdle;
  if (g_phase.compare_exchange_strong(expected, kClaimed) || expected == kClaimed) return true;
  g_deferred.store(sig);
  return false;
}

void begin_commit() {
  for (;;) {
    int expected = kIdle;
    if (g_phase.compare_exchange_strong(expected, kCommitting)) return;
    if (expected == kClaimed) wait_for_the_end();
    std::this_thread::yield();  // another thread's commit: a few renames
  }
}

void end_commit() {
  g_phase.store(kIdle);
  if (const int sig = g_deferred.exchange(0)) std::raise(sig);
}

}  // namespace pw
