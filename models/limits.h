// The admissible range of every integer quantity a user can give, in one table shared by the
// command-line flags (tools/flag_checks.cc bounds each flag by the limit of the quantity it
// sets) and by every file reader that reads the same quantity (model, profile, cluster, plan,
// run trace, schedule CSV, checkpoint manifest): `--stages 70000` and `"stages": 70000` in a
// run trace are refused with the same range.
//
// The ranges bound what is allocated from them (a schedule holds stages x micro-batches ops,
// a trace one event per op) and keep their products and sums inside int64: a value is checked
// against its limit before anything sized by it is allocated, and before it is narrowed to int.
//
// Messages: "<where>: expected an integer in [min, max], got <value>" (the flags' wording).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "models/json_util.h"

namespace pw::models {

struct Limit {
  int64_t min, max;
};
// A closed range of a real-valued quantity (checked with check_real_limit).
struct RealLimit {
  double min, max;
};

namespace limits {
inline constexpr Limit kStages{1, 1 << 16};          // pipeline stages (virtual stages with chunks)
inline constexpr Limit kChunks{1, 1 << 10};          // model chunks per device
inline constexpr Limit kMicroBatches{1, 1 << 20};    // micro-batches per iteration
inline constexpr Limit kMicroBatchSize{1, 1 << 30};  // samples per micro-batch
inline constexpr Limit kBatch{1, 1000000000000};     // samples per mini-batch
inline constexpr Limit kDevices{1, 1 << 24};         // devices of a cluster or a plan
inline constexpr Limit kDevicesPerNode{1, 1 << 16};
inline constexpr Limit kLayers{1, 1 << 20};          // layers of a model or profile
inline constexpr Limit kIterations{1, 1000000};      // iterations simulated back to back
inline constexpr Limit kSteps{1, 1000000000};        // training steps
inline constexpr Limit kWarmupSteps{0, 1000000000};  // steps or iterations before the timed ones
inline constexpr Limit kThreads{0, 1 << 16};
// Sizes of a model's layers (the zoo flags and a model file's layer attributes alike): their
// products stay far inside int64 (a GPT of d_model 2^17, ffn 2^19, seq 2^20, vocab 2^24 is
// beyond anything this toolkit targets).
inline constexpr Limit kDModel{1, 1 << 17};
inline constexpr Limit kHeads{1, 1 << 14};
inline constexpr Limit kFfn{0, 1 << 19};  // 0 for the flag: 4 x d_model
inline constexpr Limit kSeq{1, 1 << 20};
inline constexpr Limit kVocab{1, 1 << 24};
inline constexpr Limit kWidth{1, 1 << 20};    // an MLP's layer width
inline constexpr Limit kImage{1, 1 << 14};    // an image's side in pixels
inline constexpr Limit kClasses{1, 1 << 24};  // threads per worker (0: the worker's cores)
// A duration in nanoseconds of one op, hand-off or step (the flags take it in ms: --t-f up to
// 1e9 ms); a timestamp of a trace, up to about 31 years.
inline constexpr Limit kDurationNs{0, 1000000000000000};
inline constexpr Limit kTimestampNs{0, 1000000000000000000};
inline constexpr Limit kBytes{0, 1000000000000000000};        // a size in bytes (memory, tensors)
inline constexpr Limit kMemoryBytes{1, 1000000000000000000};  // a device's memory
// A dimension of a device file's measured matrix-product grid ("gemm": "sizes"); `calibrate
// --sizes` measures at most 32768 (tools/flag_checks.cc: what fits in memory), a file may hold
// larger products measured elsewhere.
inline constexpr Limit kGemmSize{1, 1 << 20};
// Real-valued rates (checked with check_real_limit): a link's bytes per second; a device's peak
// FLOP/s and memory bytes per second, 0 where unknown (a measured or imported profile's device).
inline constexpr Limit kBandwidth{1, 1000000000000000000};
inline constexpr Limit kDeviceRate{0, 1000000000000000000};
// Real-valued quantities of files and flags alike:
// Fraction of peak FLOP/s the cost model assumes; 0: the device's GEMM curve (models/defaults.h).
inline constexpr RealLimit kEfficiency{0, 1};
inline constexpr RealLimit kShare{0, 1};          // a share of an iteration (bubble, idle, imbalance)
inline constexpr RealLimit kSeconds{0, 1e6};      // a predicted duration (kDurationNs, in seconds)
inline constexpr RealLimit kSampleRate{0, 1e18};  // samples per second
// Ops of one schedule (stages x micro-batches x ops per micro-batch): what a schedule, its
// simulation and a trace hold in memory (about 100 bytes each).
inline constexpr int64_t kMaxScheduleOps = int64_t{1} << 25;
}  // namespace limits

// "[min, max]".
std::string range_text(const Limit& l);
// Throws InputError("<where>: expected an integer in [min, max], got <v>") when v is outside.
int64_t check_limit(int64_t v, const Limit& l, const std::string& where);

// The shortest text that reads back as `v`: whole numbers below 1e18 in full ("65536"), others
// in %g style ("0.5", "1e-09", "1e+18"). The flags and the readers print ranges with it.
std::string format_real(double v);
// "[min, max]" with format_real.
std::string range_text(const RealLimit& l);

// A real number within `l` (the flags' wording): InputError("<where>: expected a value in
// [min, max], got <v>") when outside or not finite.
double check_real_limit(double v, const RealLimit& l, const std::string& where);
double check_real_limit(double v, const Limit& l, const std::string& where);
// JSON number field `key` of `obj` within `l`; `fallback` when absent (InputError naming
// <path>/<key> when not a finite number or out of range).
double get_real_limited_or(const Json& obj, std::string_view key, const std::string& path, double fallback,
                           const RealLimit& l);

// JSON integer field `key` of `obj` within `l` (InputError naming <path>/<key> when missing,
// not an integer, or out of range: a value beyond int64 is out of range, never wrapped).
int64_t get_limited(const Json& obj, std::string_view key, const std::string& path, const Limit& l);
int64_t get_limited_or(const Json& obj, std::string_view key, const std::string& path, int64_t fallback,
                       const Limit& l);
// The same, narrowed to int (l.max must fit in int).
int get_limited_int(const Json& obj, std::string_view key, const std::string& path, const Limit& l);
int get_limited_int_or(const Json& obj, std::string_view key, const std::string& path, int fallback, const Limit& l);
// A JSON value that must be an integer within `l` (an array element); `where` names it.
int64_t limited_value(const Json& v, const std::string& where, const Limit& l);

// The limit of a layer attribute that means the same as a zoo flag ("seq", "d_model", "heads",
// "ffn", "vocab", "classes", "in_h", "in_w"), nullptr for any other attribute.
const Limit* layer_attribute_limit(std::string_view attribute);

// Throws InputError("<where>: <S> stages x <M> micro-batches: more than <kMaxScheduleOps> ops in
// one schedule") when S virtual stages and M micro-batches (3 compute ops each) exceed
// kMaxScheduleOps. S and M must already be within kStages and kMicroBatches.
void check_schedule_size(int64_t virtual_stages, int64_t micro_batches, const std::string& where);

}  // namespace pw::models
