// The one entry point through which Pipewright reads an input file (model, profile, cluster,
// plan, sweep and trace JSON, PipeDream graph.txt, `--data` text).
//
// Contract: read_input_file(file, limit) checks, before reading a byte, that `file` names a
// regular file (a directory is "<file>: is a directory"; /dev/zero, /dev/urandom, a FIFO or a
// socket is "<file>: not a regular file"), that it is not empty and not larger than `limit`
// bytes, then reads it whole. It never blocks on a device or a pipe and never reads more than
// `limit` + 1 bytes even if the file grows meanwhile. Every failure throws pw::InputError with
// one line naming the file (escaped and cut, models/error_text.h). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pw {

// Default cap of an input file: 256 MiB, far above any real model, profile, plan or trace.
inline constexpr uint64_t kMaxInputFileBytes = uint64_t{256} << 20;

std::string read_input_file(const std::string& file, uint64_t limit = kMaxInputFileBytes);

// Throws InputError("<name>: line L: not valid UTF-8 text") unless `text` is valid UTF-8 (text
// formats whose names end up in JSON output, e.g. PipeDream graph.txt, call this first).
void check_utf8(std::string_view text, const std::string& name);

}  // namespace pw
