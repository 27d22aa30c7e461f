// Notes: lines a command has to say beside its result ("note: F is not the cluster P was made
// for; simulating on it"). A command defers them with defer_note(); main() prints them on
// stderr, in order, once the command has succeeded, and drops them when it fails, so that a
// failing command prints exactly one line: its error. Not thread-safe: call from the command's
// own thread.
#pragma once

#include <string>

namespace pw::tools {

// `line` without "note: " and without a trailing newline.
void defer_note(const std::string& line);
// Prints every deferred note as "note: <line>" on stderr and forgets them.
void print_deferred_notes();

}  // namespace pw::tools
