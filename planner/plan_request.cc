#include "planner/plan_request.h"

#include <cerrno>
#include <cstdlib>

#include "models/enum_names.h"
#include "models/error.h"
#include "models/error_text.h"
#include "models/limits.h"

namespace pw::planner {

namespace {

constexpr std::pair<Objective, std::string_view> kObjectiveWords[] = {
    {Objective::sync, "sync"}, {Objective::async, "async"}, {Objective::pipedream, "pipedream"}};
constexpr std::pair<Partitioner, std::string_view> kPartitionerWords[] = {
    {Partitioner::dp, "dp"}, {Partitioner::gpipe_greedy, "gpipe-greedy"}, {Partitioner::even, "even"}};
constexpr std::pair<RecomputeChoice, std::string_view> kRecomputeWords[] = {
    {RecomputeChoice::automatic, "auto"}, {RecomputeChoice::on, "on"}, {RecomputeChoice::off, "off"}};

}  // namespace

std::string_view to_string(Objective o) { return models::enum_word(kObjectiveWords, o); }
std::string_view to_string(Partitioner p) { return models::enum_word(kPartitionerWords, p); }
std::string_view to_string(RecomputeChoice r) { return models::enum_word(kRecomputeWords, r); }

Objective parse_objective(std::string_view s, const std::string& where) {
  return models::parse_enum_word(kObjectiveWords, s, where, "objective");
}
Partitioner parse_partitioner(std::string_view s, const std::string& where) {
  return models::parse_enum_word(kPartitionerWords, s, where, "partitioner");
}
RecomputeChoice parse_recompute_choice(std::string_view s, const std::string& where) {
  return models::parse_enum_word(kRecomputeWords, s, where, "recompute choice");
}

std::string to_string(const std::optional<ScheduleKind>& s) { return s ? std::string(to_string(*s)) : "auto"; }

std::optional<ScheduleKind> parse_schedule_request(std::string_view s, const std::string& where) {
  if (s == "auto") return std::nullopt;
  return parse_schedule_kind(s, where);
}

std::string micro_batches_to_string(int count) { return count > 0 ? std::to_string(count) : "auto"; }

int parse_micro_batches_request(std::string_view s, const std::string& where) {
  if (s == "auto") return 0;
  const std::string text(s);
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 1 || errno == ERANGE || v > models::limits::kMicroBatches.max)
    throw InputError(where + ": expected \"auto\" or a positive integer, got \"" + escape_for_message(s) + "\"");
  return static_cast<int>(v);
}

}  // namespace pw::planner
