// The output files of one command, written all or nothing.
//
// Contract:
// - A command makes one OutputSet before any work and add()s every file it may write, with the
//   flag that names it. add() checks the path at once (check_output_file): a bad output path
//   is refused before anything is computed. Output directories that the command creates
//   itself (checkpoints) are checked with check_output_directory.
// - While the set is alive it is the process's current set: every write_output(file, ...)
//   (and so every pw::write_file_atomic and pw::save_json_file, models/json_util.h) of a file it
//   holds writes a temporary beside the file (models/temp_registry.h), fsynced, and nothing
//   else. commit() re-checks the targets and renames every temporary into place, as one group
//   that no SIGINT / SIGTERM handler cuts in two (the signal is acted on when the group is
//   done). A set destroyed without commit() (an exception, a failed write) removes its
//   temporaries and leaves every target as it was. A signal removes them too
//   (tools/signals.h). A rename that fails after earlier ones succeeded (the checks make this
//   a disk or permission change in between) is reported; the earlier files stay replaced.
// - Only regular files are ever replaced: a symbolic link, directory, FIFO, socket or device
//   at an output path is refused, never written through or replaced.
// - "-" means standard output: the content is buffered and printed at commit(), after the
//   renames. At most one output of a set may be "-".
// - write_output of a file that no current set holds writes it at once, alone: checked as
//   add() checks, a temporary, fsync, rename (checkpoint files, library callers, tests).
// - Thread-safety: at most one OutputSet exists at a time (a second is an InternalError);
//   add() and commit() on the thread that made it; write_output from any thread.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace pw {

// Throws InputError("<flag> <path>: <why>") unless `path` can be written as a file: "-", or a
// path whose directory exists, is searchable and writable, whose name is short enough for a
// temporary beside it, and which is absent or a regular file that this user may replace.
// `flag` may be empty (the message then starts with the path).
void check_output_file(const std::string& flag, const std::string& path);
// Throws InputError("<flag> <dir>: <why>") unless `dir` is a writable directory, or absent
// with its nearest existing ancestor a writable directory (so it can be created).
void check_output_directory(const std::string& flag, const std::string& dir);

class OutputSet;

// Runs `work` with one output, `path` of `flag` (empty: none), registered in a fresh OutputSet:
// checked before the work, renamed into place after it, never half-written on failure.
void run_with_output(const std::string& flag, const std::string& path, const std::function<void()>& work);

class OutputSet {
 public:
  OutputSet();
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Registers the output `path` of `flag` and checks it now; an empty path (the flag not given)
  // is ignored. Throws InputError on a bad path or a path already registered by another flag.
  void add(const std::string& flag, const std::string& path);
  bool holds(const std::string& path) const;
  // Writes `content` to the temporary of the registered `path` (replacing an earlier write).
  void write(const std::string& path, std::string_view content);
  // Renames every written temporary into place (see above). Registered outputs never written
  // are left alone. Call once.
  void commit();

  static OutputSet* current();

 private:
  struct Entry {
    std::string flag, path, key, temp, buffered;
    bool written = false;
  };
  Entry* find(const std::string& path);
  const Entry* find(const std::string& path) const;

  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  bool committed_ = false;
};

// Writes `content` to `file`: into the current OutputSet when it holds `file`, else at once.
void write_output(const std::string& file, std::string_view content);

}  // namespace pw
