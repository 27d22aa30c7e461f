#include "tools/flag_checks.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <thread>

#include "models/error.h"
#include "models/error_text.h"
#include "models/limits.h"

namespace pw::tools {
namespace {

constexpr double kI64 = 9.2e18;
constexpr double kNoMax = std::numeric_limits<double>::max();

struct Bound {
  const char* flag;
  double min, max;
  FlagUnit unit = FlagUnit::number;
};

// Ranges of the numeric flags of every command. A flag that sets a quantity a file also holds
// takes its range from models/limits.h, the one table the readers use too (the model sizes
// there are capped so that their products stay far inside int64).
namespace lim = models::limits;
constexpr double lo(const models::Limit& l) { return static_cast<double>(l.min); }
constexpr double hi(const models::Limit& l) { return static_cast<double>(l.max); }
constexpr double kMaxMs = hi(lim::kDurationNs) / 1e6;  // the --t-* flags are in ms
constexpr Bound kBounds[] = {
    {"--layers", 1, hi(lim::kLayers)},
    {"--d-model", lo(lim::kDModel), hi(lim::kDModel)},
    {"--heads", lo(lim::kHeads), hi(lim::kHeads)},
    {"--ffn", lo(lim::kFfn), hi(lim::kFfn)},
    {"--seq", lo(lim::kSeq), hi(lim::kSeq)},
    {"--vocab", lo(lim::kVocab), hi(lim::kVocab)},
    {"--depth", 1, hi(lim::kLayers)},
    {"--width", lo(lim::kWidth), hi(lim::kWidth)},
    {"--image", lo(lim::kImage), hi(lim::kImage)},
    {"--width-divisor", 1, 1 << 14},
    {"--classes", lo(lim::kClasses), hi(lim::kClasses)},
    {"--batch", lo(lim::kBatch), hi(lim::kBatch)},
    {"--micro-batch", 0, hi(lim::kMicroBatchSize)},
    {"--micro-batch-size", lo(lim::kMicroBatchSize), hi(lim::kMicroBatchSize)},
    {"--micro-batches", lo(lim::kMicroBatches), hi(lim::kMicroBatches)},
    {"--stages", lo(lim::kStages), hi(lim::kStages)},
    {"--chunks", lo(lim::kChunks), hi(lim::kChunks)},
    {"--steps", lo(lim::kSteps), hi(lim::kSteps)},
    {"--warmup-steps", -1, hi(lim::kWarmupSteps)},
    {"--iterations", lo(lim::kIterations), hi(lim::kIterations)},
    {"--prefetch", 0, 64},
    {"--trace-keep", 1, 1e9},
    {"--reps", 1, 1e6},
    {"--warmup", 0, 1e6},
    {"--devices", lo(lim::kDevices), hi(lim::kDevices)},
    {"--devices-per-node", lo(lim::kDevicesPerNode), hi(lim::kDevicesPerNode)},
    {"--max-layers", 1, hi(lim::kLayers)},
    {"--levels", 1, hi(lim::kDevices)},
    {"--efficiency", lim::kEfficiency.min, lim::kEfficiency.max},
    {"--lr", 0, 1e6},
    {"--weight-decay", 0, 1e6},
    {"--t-f", 0, kMaxMs},
    {"--t-b", 0, kMaxMs},
    {"--t-w", 0, kMaxMs},
    {"--t-comm", 0, kMaxMs},
    {"--seed", 0, 18446744073709551616.0},
    {"--memory", lo(lim::kMemoryBytes), hi(lim::kMemoryBytes), FlagUnit::bytes},
    {"--memory-limit", 0, hi(lim::kBytes), FlagUnit::bytes},
    {"--copy-bytes", 4096, double(int64_t{64} << 30), FlagUnit::bytes},
    {"--repeats", 1, 1e6},
    {"--sizes", 1, 32768},  // calibrate's grid: three 32768^2 fp32 operands are 12 GiB
    {"--layer-batch", 0, hi(lim::kMicroBatchSize)},
    {"--bandwidth", lo(lim::kBandwidth), hi(lim::kBandwidth), FlagUnit::bytes_per_s},
    {"--bandwidths", lo(lim::kBandwidth), hi(lim::kBandwidth), FlagUnit::bytes_per_s},
};

// Text options that hold a comma-separated list of numbers.
bool is_numeric_list_flag(const std::string& flag) { return flag == "--levels" || flag == "--bandwidths"; }

const Bound* bound_of(const std::string& flag) {
  for (const Bound& b : kBounds)
    if (flag == b.flag) return &b;
  return nullptr;
}

// The text CLI11 converts to exactly `v` (a whole number).
std::string format_number(double v) {
  char buf[64];
  // Whole numbers an int64 holds are written in full: CLI11 reads "1e+18" as no integer at all,
  // and the limits reach 1e18 (--memory-limit's).
  if (v == std::floor(v) && std::fabs(v) < 9.2e18) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct UnitSuffix {
  const char* text;
  double scale;
};

// Memory sizes: decimal (kB, MB, GB, TB) and binary (KiB, MiB, GiB, TiB) bytes.
constexpr UnitSuffix kByteUnits[] = {
    {"B", 1},     {"kB", 1e3},     {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
    {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
};
// Bandwidths: bytes per second (B/s, GB/s, GiB/s, ...) and bits per second (bps, Gbps, Gb/s).
constexpr UnitSuffix kBitRateUnits[] = {
    {"bps", 0.125}, {"kbps", 125.0}, {"Kbps", 125.0}, {"Mbps", 125e3}, {"Gbps", 125e6}, {"Tbps", 125e9},
    {"b/s", 0.125}, {"kb/s", 125.0}, {"Kb/s", 125.0}, {"Mb/s", 125e3}, {"Gb/s", 125e6}, {"Tb/s", 125e9},
};

std::string expected_text(FlagUnit unit) {
  switch (unit) {
    case FlagUnit::bytes: return "a size in bytes (e.g. 80GiB, 80GB, 80e9)";
    case FlagUnit::bytes_per_s: return "a bandwidth (e.g. 100Gbps, 1.25GB/s, 1.25e9 bytes/s)";
    default: return "a number";
  }
}

}  // namespace

double parse_flag_number(const std::string& flag, const std::string& text, FlagUnit unit) {
  std::string t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  size_t lead = 0;
  while (lead < t.size() && std::isspace(static_cast<unsigned char>(t[lead]))) ++lead;
  t = t.substr(lead);
  const std::string shown = "\"" + escape_for_message(text) + "\"";
  if (t.empty()) throw InputError(flag + ": expected " + expected_text(unit) + ", got an empty value");
  // strtod also reads hexadecimal ("0x10", "0x1p4"): a flag takes decimal numbers only.
  const size_t digits = t[0] == '+' || t[0] == '-' ? 1 : 0;
  if (t.size() > digits + 1 && t[digits] == '0' && (t[digits + 1] == 'x' || t[digits + 1] == 'X'))
    throw InputError(flag + ": expected " + expected_text(unit) + " in decimal, got " + shown);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) throw InputError(flag + ": expected " + expected_text(unit) + ", got " + shown);
  if (std::isnan(v)) throw InputError(flag + ": not a number (got " + shown + ")");
  if (std::isinf(v) || (errno == ERANGE && std::fabs(v) > 1))
    throw InputError(flag + ": not finite (got " + shown + ")");
  std::string suffix(end);
  if (suffix.empty()) return v;
  if (unit != FlagUnit::number) {
    std::string s = suffix;
    if (unit == FlagUnit::bytes_per_s) {
      for (const UnitSuffix& u : kBitRateUnits)
        if (s == u.text) return v * u.scale;
      if (s.size() > 2 && s.compare(s.size() - 2, 2, "/s") == 0) s.resize(s.size() - 2);
    }
    for (const UnitSuffix& u : kByteUnits)
      if (s == u.text) {
        const double r = v * u.scale;
        if (!std::isfinite(r)) throw InputError(flag + ": not finite (got " + shown + ")");
        return r;
      }
  }
  throw InputError(flag + ": expected " + expected_text(unit) + ", got " + shown);
}

namespace {

// Checks one value of `flag` (already split by CLI11 at its delimiter) and rewrites it in a
// form CLI11 converts exactly; returns "" or the message CLI11 prefixes with the flag name.
std::string check_value(const std::string& flag, const std::string& type, std::string& text) {
  const Bound* b = bound_of(flag);
  const FlagUnit unit = b ? b->unit : FlagUnit::number;
  const bool integer = type == "INT" || type == "UINT" || (b && unit != FlagUnit::number);
  double lo = type == "UINT" ? 0 : -kNoMax, hi = kNoMax;
  if (integer && type != "FLOAT")
    lo = std::max(lo, type == "UINT" ? 0.0 : -kI64), hi = std::min(hi, type == "UINT" ? 18446744073709551616.0 : kI64);
  if (b) lo = std::max(lo, b->min), hi = std::min(hi, b->max);
  if (flag == "--threads") lo = 0, hi = max_threads();
  double v = 0;
  try {
    v = parse_flag_number(flag, text, unit);
  } catch (const InputError& e) {
    std::string msg = e.what();
    return msg.substr(flag.size() + 2);  // CLI11 puts "<flag>: " in front
  }
  const bool want_integer = integer && unit == FlagUnit::number && type != "FLOAT";
  if (want_integer && v != std::floor(v)) return "expected an integer, got \"" + escape_for_message(text) + "\"";
  if (unit == FlagUnit::bytes && v != std::floor(v))
    return "expected a whole number of bytes, got \"" + escape_for_message(text) + "\"";
  if (v < lo || v > hi) {
    const std::string range = models::range_text(models::RealLimit{lo, hi});
    if (flag == "--threads")
      return "expected at most " + std::to_string(max_threads()) + " threads (4 x this machine's " +
             std::to_string(machine_cores()) + " cores), got \"" + escape_for_message(text) + "\"";
    return std::string("expected ") + (want_integer ? "an integer" : "a value") + " in " + range + ", got \"" +
           escape_for_message(text) + "\"";
  }
  if (want_integer || unit != FlagUnit::number) {
    if (type == "UINT" && v >= 9.2e18) return "";  // leave huge unsigned values (seeds) as typed
    text = format_number(std::floor(v));
  }
  return "";
}

void install_on(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    std::string type = opt->get_type_name();
    std::string lname;
    for (const std::string& l : opt->get_lnames()) lname = "--" + l;
    const std::string key = lname.empty() ? opt->get_name() : lname;
    const bool numeric = type == "INT" || type == "UINT" || type == "FLOAT";
    if (!numeric && !is_numeric_list_flag(key) && !(bound_of(key) && bound_of(key)->unit != FlagUnit::number)) continue;
    if (opt->get_expected_min() == 0) continue;  // a flag without a value
    if (!numeric) type = "LIST";
    opt->transform(CLI::Validator(
        [key, type](std::string& text) -> std::string {
          if (type != "LIST") return check_value(key, type, text);
          // A comma-separated list in one string (--levels 4,4, --bandwidths 10Gbps,1GB/s).
          std::string out, item, rest = text;
          for (size_t start = 0;;) {
            size_t comma = rest.find(',', start);
            item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            std::string err = check_value(key, "FLOAT", item);
            if (!err.empty()) return err;
            out += (out.empty() ? "" : ",") + item;
            if (comma == std::string::npos) break;
            start = comma + 1;
          }
          text = out;
          return "";
        },
        "", "pw_flag_check"));
  }
  for (CLI::App* sub : app->get_subcommands({})) install_on(sub);
}

}  // namespace

void install_flag_checks(CLI::App& app) { install_on(&app); }

int machine_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

int max_threads() { return 4 * machine_cores(); }

void check_thread_count(int64_t threads, const std::string& where) {
  if (threads < 0 || threads > max_threads())
    throw InputError(where + ": expected at most " + std::to_string(max_threads()) + " threads (4 x this machine's " +
                     std::to_string(machine_cores()) + " cores), got " + std::to_string(threads));
}

int64_t ms_flag_to_ns(double ms, const char* flag) {
  if (!std::isfinite(ms) || ms < 0 || ms > 1e9)
    throw InputError(std::string(flag) + ": expected a time in milliseconds in [0, 1e9], got " +
                     escape_for_message(std::to_string(ms)));
  return static_cast<int64_t>(std::llround(ms * 1e6));
}

}  // namespace pw::tools
