#include "planner/schedule_csv.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "models/error.h"
#include "models/json_util.h"
#include "models/limits.h"

namespace pw::planner {

namespace {

char action_letter(OpKind kind) {
  switch (kind) {
    case OpKind::F: return 'F';
    case OpKind::BW: return 'B';
    case OpKind::B: return 'I';
    case OpKind::W: return 'W';
    default: return 0;
  }
}

// Splits text into rows of cells; a final newline does not start a row. "\r\n" accepted.
std::vector<std::vector<std::string>> split_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string> cells;
    if (!line.empty()) {
      size_t c = 0;
      while (true) {
        size_t comma = line.find(',', c);
        cells.emplace_back(line.substr(c, comma == std::string_view::npos ? std::string_view::npos : comma - c));
        if (comma == std::string_view::npos) break;
        c = comma + 1;
      }
    }
    rows.push_back(std::move(cells));
    pos = end + 1;
  }
  return rows;
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char ch) { return ch != ' ' && ch != '\t'; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct Parsed {
  OpKind kind;
  int stage, micro_batch;
};

// Parses one non-empty cell; `at` is "<where>: row R, column C".
Parsed parse_action(const std::string& cell, const std::string& at) {
  const std::string expected = " (expected <stage><F|B|I|W><micro-batch>, e.g. 0F1)";
  size_t i = 0;
  while (i < cell.size() && cell[i] >= '0' && cell[i] <= '9') ++i;
  size_t j = i;
  while (j < cell.size() && !(cell[j] >= '0' && cell[j] <= '9')) ++j;
  const std::string stage = cell.substr(0, i), type = cell.substr(i, j - i), mb = cell.substr(j);
  if (!all_digits(stage)) throw InputError(at + ": \"" + cell + "\" has no stage index" + expected);
  if (type == "SEND_F" || type == "RECV_F" || type == "SEND_B" || type == "RECV_B" || type == "UNSHARD" ||
      type == "RESHARD" || type == "REDUCE_GRAD")
    throw InputError(at + ": \"" + cell +
                     "\" is a communication action; only the compute_only format (F, B, I, W) is read");
  OpKind kind;
  if (type == "F") kind = OpKind::F;
  else if (type == "B") kind = OpKind::BW;
  else if (type == "I") kind = OpKind::B;
  else if (type == "W") kind = OpKind::W;
  else throw InputError(at + ": unknown action type \"" + type + "\" in \"" + cell + "\"" + expected);
  if (mb.empty()) throw InputError(at + ": \"" + cell + "\" has no micro-batch index" + expected);
  if (!all_digits(mb)) throw InputError(at + ": \"" + cell + "\" has a malformed micro-batch index" + expected);
  const int st = std::stoi(stage), m = std::stoi(mb);
  models::check_limit(st, {0, models::limits::kStages.max - 1}, at + ": stage index of \"" + cell + "\"");
  models::check_limit(m, {0, models::limits::kMicroBatches.max - 1}, at + ": micro-batch index of \"" + cell + "\"");
  return {kind, st, m};
}

}  // namespace

std::string schedule_to_csv(const Schedule& schedule) {
  for (int st = 0; st < schedule.num_stages; ++st)
    if (schedule.replicas(st) > 1)
      throw InputError("schedule CSV: stage " + std::to_string(st) + " has " + std::to_string(schedule.replicas(st)) +
                       " replicas, which the compute_only format cannot express (a stage is on one rank)");
  std::string out;
  for (size_t d = 0; d < schedule.device_ops.size(); ++d) {
    bool first = true;
    for (const Op& op : schedule.device_ops[d]) {
      if (op.kind == OpKind::step) continue;
      const char letter = action_letter(op.kind);
      if (letter == 0)
        throw InputError("schedule CSV: device " + std::to_string(d) + " has a " + std::string(to_string(op.kind)) +
                         " op, which PyTorch's compute_only CSV format cannot carry");
      if (!first) out += ',';
      out += std::to_string(op.stage) + letter + std::to_string(op.micro_batch);
      first = false;
    }
    out += '\n';
  }
  return out;
}

Schedule schedule_from_csv(std::string_view text, const std::string& where, std::optional<ScheduleKind> kind) {
  const auto rows = split_csv(text);
  if (rows.empty()) throw InputError(where + ": empty schedule CSV (expected one row of actions per rank)");
  Schedule s;
  s.num_devices = static_cast<int>(rows.size());
  s.device_ops.resize(rows.size());
  std::map<int, std::pair<int, std::string>> stage_rank;  // stage -> (rank, where first seen)
  std::set<std::tuple<OpKind, int, int>> seen;
  int max_stage = -1, max_mb = -1;
  std::string max_mb_at;
  size_t actions = 0;
  bool split = false;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < rows[r].size(); ++c) {
      const std::string cell = trim(rows[r][c]);
      if (cell.empty()) continue;  // an idle time step
      const std::string at = where + ": row " + std::to_string(r + 1) + ", column " + std::to_string(c + 1);
      const Parsed p = parse_action(cell, at);
      auto [it, fresh] = stage_rank.emplace(p.stage, std::make_pair(static_cast<int>(r), at));
      if (!fresh && it->second.first != static_cast<int>(r))
        throw InputError(at + ": stage " + std::to_string(p.stage) + " is also on rank " +
                         std::to_string(it->second.first) + " (" + it->second.second.substr(where.size() + 2) +
                         "); a stage runs on one rank");
      if (!seen.emplace(p.kind, p.stage, p.micro_batch).second)
        throw InputError(at + ": \"" + cell + "\" appears twice");
      split = split || p.kind == OpKind::B || p.kind == OpKind::W;
      max_stage = std::max(max_stage, p.stage);
      if (p.micro_batch > max_mb) max_mb = p.micro_batch, max_mb_at = at;
      ++actions;
      s.device_ops[r].push_back({p.kind, p.stage, p.micro_batch});
    }
  }
  if (max_stage < 0) throw InputError(where + ": no actions (expected one row of actions per rank)");
  // Every stage runs every micro-batch: an index beyond the number of actions leaves gaps, and
  // would size what is allocated after this by the index rather than by the file.
  if (static_cast<size_t>(max_mb) >= actions)
    throw InputError(max_mb_at + ": micro-batch index " + std::to_string(max_mb) + " in a CSV of " +
                     std::to_string(actions) + " actions (expected micro-batches 0, 1, ... on every stage)");
  if (static_cast<size_t>(max_stage) >= actions)
    throw InputError(where + ": stage index " + std::to_string(max_stage) + " in a CSV of " + std::to_string(actions) +
                     " actions (expected stages 0, 1, ...)");
  models::check_schedule_size(max_stage + 1, max_mb + 1, where);
  s.num_stages = max_stage + 1;
  s.num_micro_batches = max_mb + 1;
  std::set<int> ranks_with_many;
  std::map<int, int> stages_of_rank;
  for (int st = 0; st < s.num_stages; ++st) {
    auto it = stage_rank.find(st);
    if (it == stage_rank.end())
      throw InputError(where + ": stage " + std::to_string(st) + " has no actions (stages 0.." +
                       std::to_string(max_stage) + " expected)");
    s.stage_device.push_back(it->second.first);
    if (++stages_of_rank[it->second.first] > 1) ranks_with_many.insert(it->second.first);
  }
  s.kind = kind                       ? *kind
           : split                    ? ScheduleKind::zb_h1
           : !ranks_with_many.empty() ? ScheduleKind::interleaved_1f1b
                                      : ScheduleKind::one_f_one_b;
  if (is_synchronous(s.kind))
    for (auto& ops : s.device_ops) ops.push_back({OpKind::step, -1, -1});
  return s;
}

Schedule load_schedule_csv(const std::string& file, std::optional<ScheduleKind> kind) {
  return schedule_from_csv(read_text_file(file), file, kind);
}

}  // namespace pw::planner
