// Numeric command-line flags, checked in one place.
//
// install_flag_checks(app) walks every subcommand of `app` and puts a transform in front of
// every numeric option (CLI11 type INT, UINT or FLOAT, and the numeric list flags named in
// flag_checks.cc). The transform runs before CLI11 converts the text, so every numeric flag:
// - says "<flag>: not a number" for nan and "<flag>: not finite" for inf / an overflow;
// - accepts exponents for integers ("1e6") when the value is a whole number;
// - is bounded: the per-flag range in flag_checks.cc (sizes that are allocated, e.g. --vocab,
//   --d-model, --micro-batch-size, have ranges whose products cannot overflow int64), else the
//   destination type's range; --threads is bounded by this machine's core count;
// - takes units where it is a memory size (80GiB, 80GB, 80e9, 512MiB) or a bandwidth
//   (100Gbps, 1.25GB/s, 10Gb/s, 1e9); the text is rewritten to plain bytes or bytes/s.
// Failures are CLI11 validation errors: one line "<flag>: <why>", exit 2 (tools/main.cc).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace pw::tools {

enum class FlagUnit { number, bytes, bytes_per_s };

// Parses `text` as the value of `flag`: finite, with the units of `unit`. Throws InputError
// ("<flag>: not a number", "<flag>: not finite", "<flag>: expected ..., got \"...\"").
double parse_flag_number(const std::string& flag, const std::string& text, FlagUnit unit);

void install_flag_checks(CLI::App& app);

// A duration flag given in milliseconds (simulate's and schedule import's --t-f, --t-b, --t-w,
// --t-comm), in whole nanoseconds. InputError("<flag>: expected a time in milliseconds in [0, 1e9],
// got V") for a negative, non-finite or larger value.
int64_t ms_flag_to_ns(double ms, const char* flag);

// The help of --efficiency, one wording for every command that takes it (models/defaults.h).
inline constexpr const char* kEfficiencyHelp =
    "fraction of peak FLOP/s the matrix products reach, in [0, 1]; 0 (default): each by its shape on the "
    "device's GEMM curve where the catalog has one (A100, H100, H200 at bf16), else 0.5";

int machine_cores();
// Threads per worker this machine can run: at most 4 x its cores (--threads, a plan's
// threads_per_stage). InputError("<where>: expected at most N threads (4 x this machine's C
// cores), got V") beyond that or below 0.
int max_threads();
void check_thread_count(int64_t threads, const std::string& where);

}  // namespace pw::tools
