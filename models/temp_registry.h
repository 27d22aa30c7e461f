// The temporary files this process has created and not yet renamed into place or removed, kept
// where a signal handler can remove them.
//
// Contract:
// - create_temp_file(target) creates, exclusively and with mode 0600, a new empty file
//   "<dir>/.<name>.tmp<pid>-<n>" beside `target` and returns its descriptor and name. Its name
//   is in the table before the file exists, so no signal can find a temporary it does not know.
//   Throws InputError naming `target` when the file cannot be created, InternalError when more
//   than kMaxTempFiles temporaries are alive at once or a name is longer than kMaxTempPath.
// - release_temp_file(name) forgets a temporary (call it after renaming it into place or after
//   unlinking it yourself). unlink_temp_file(name) unlinks it and forgets it.
// - remove_temp_files() unlinks every temporary in the table. It is async-signal-safe (it
//   reads a fixed table of fixed-size buffers and calls only unlink), meant for signal
//   handlers, and does nothing once a commit is under way (see below).
// - Commits: begin_commit() marks the start of a group of renames that must not be cut in two
//   by a signal handler; end_commit() marks its end. A handler calls claim_for_signal(sig)
//   first: false means a commit is under way, and the signal has been recorded instead; it is
//   raised again (with raise(), to the committing thread) by end_commit(). true means no commit
//   can start any more (the process is ending): the handler goes on to remove the temporaries
//   and end the process. begin_commit() waits while another thread commits, and does not return
//   on a process that a handler has claimed.
// - Thread-safety: every function may be called from any thread; the table uses lock-free
//   atomics only. A name is unique while its process lives (pid and a counter).
#pragma once

#include <cstddef>
#include <string>

namespace pw {

inline constexpr size_t kMaxTempFiles = 64;
inline constexpr size_t kMaxTempPath = 4096;

struct TempFile {
  int fd = -1;
  std::string name;
};

TempFile create_temp_file(const std::string& target);
void release_temp_file(const std::string& name);
void unlink_temp_file(const std::string& name);

// Async-signal-safe.
void remove_temp_files() noexcept;
bool claim_for_signal(int sig) noexcept;

void begin_commit();
void end_commit();

}  // namespace pw
