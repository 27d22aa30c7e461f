// The input readers of Pipewright by name, for the libFuzzer harnesses (fuzz/fuzz_*.cc) and the
// corpus/regression replay test (tests/fuzz/replay_test.cc).
//
// Contract: read_as(reader, bytes) feeds `bytes` to the reader exactly as the CLI does after
// read_input_file (JSON text: depth check + parse + <kind>_from_json; graph.txt:
// parse_pipedream_graph), then writes what it read back out where the tool would (a JSON dump,
// a sweep expanded when small). Bad input ends in pw::InputError, which read_as swallows and
// reports as false; anything else (another exception, a crash, a sanitizer report) escapes and
// is a bug. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace pw::fuzz {

// "model", "profile", "cluster", "plan", "sweep", "trace", "pipedream" (PipeDream graph.txt),
// "schedule" (the compute-only schedule CSV of `schedule import`), "run-trace" (what
// `simulate --replay` reads: read, replayed, written back), "device" (a `--device FILE` of
// `pipewright calibrate`: read, priced, written back).
const std::vector<std::string_view>& reader_names();

// True when the input was accepted, false when rejected with pw::InputError.
bool read_as(std::string_view reader, std::string_view bytes);

}  // namespace pw::fuzz
