#include "planner/schedule.h"

#include "models/enum_names.h"
#include "models/error.h"
#include "models/error_text.h"
#include "models/limits.h"

namespace pw::planner {

namespace lim = models::limits;

namespace {
constexpr std::pair<ScheduleKind, std::string_view> kScheduleNames[] = {
    {ScheduleKind::gpipe, "gpipe"},
    {ScheduleKind::one_f_one_b, "1f1b"},
    {ScheduleKind::interleaved_1f1b, "interleaved-1f1b"},
    {ScheduleKind::zb_h1, "zb-h1"},
    {ScheduleKind::zb_h2, "zb-h2"},
    {ScheduleKind::pipedream_async, "pipedream-async"},
    {ScheduleKind::two_bw, "2bw"},
};
constexpr std::pair<OpKind, std::string_view> kOpNames[] = {
    {OpKind::F, "F"},
    {OpKind::B, "B"},
    {OpKind::W, "W"},
    {OpKind::BW, "BW"},
    {OpKind::send, "send"},
    {OpKind::recv, "recv"},
    {OpKind::allreduce, "allreduce"},
    {OpKind::step, "step"},
};

}  // namespace

std::string_view to_string(ScheduleKind kind) { return models::enum_word(kScheduleNames, kind); }

ScheduleKind parse_schedule_kind(std::string_view s, const std::string& where) {
  return models::parse_enum_word(kScheduleNames, s, where, "schedule");
}

bool is_synchronous(ScheduleKind kind) { return kind != ScheduleKind::pipedream_async && kind != ScheduleKind::two_bw; }

bool splits_backward(ScheduleKind kind) { return kind == ScheduleKind::zb_h1 || kind == ScheduleKind::zb_h2; }

std::string_view to_string(OpKind kind) { return models::enum_word(kOpNames, kind); }

OpKind parse_op_kind(std::string_view s, const std::string& where) {
  return models::parse_enum_word(kOpNames, s, where, "op kind");
}

size_t Schedule::num_ops() const {
  size_t n = 0;
  for (const auto& ops : device_ops) n += ops.size();
  return n;
}

void to_json(Json& j, const Schedule& s) {
  Json devices = Json::array();
  for (const auto& ops : s.device_ops) {
    Json list = Json::array();
    for (const Op& op : ops) {
      Json o = {{"op", std::string(to_string(op.kind))}, {"stage", op.stage}, {"micro_batch", op.micro_batch}};
      if (op.peer >= 0) o["peer"] = op.peer;
      if (op.bytes > 0) o["bytes"] = op.bytes;
      list.push_back(o);
    }
    devices.push_back(list);
  }
  j = Json{{"format", format_tag("schedule", 1)},
           {"kind", std::string(to_string(s.kind))},
           {"num_devices", s.num_devices},
           {"num_stages", s.num_stages},
           {"num_micro_batches", s.num_micro_batches},
           {"stage_device", s.stage_device},
           {"device_ops", devices}};
  if (!s.stage_replicas.empty()) j["stage_replicas"] = s.stage_replicas;
}

Schedule schedule_from_json(const Json& j) {
  require_object(j, "");
  check_format(j, "schedule", 1, "");
  Schedule s;
  s.kind = parse_schedule_kind(get_string(j, "kind", ""), "/kind");
  s.num_devices = models::get_limited_int(j, "num_devices", "", lim::kDevices);
  s.num_stages = models::get_limited_int(j, "num_stages", "", lim::kStages);
  s.num_micro_batches = models::get_limited_int(j, "num_micro_batches", "", lim::kMicroBatches);
  const models::Limit device{0, s.num_devices - 1};
  const Json& sd = require_array(j, "stage_device", "");
  if (static_cast<int>(sd.size()) != s.num_stages)
    throw InputError("/stage_device: expected " + std::to_string(s.num_stages) + " entries");
  for (size_t k = 0; k < sd.size(); ++k) {
    s.stage_device.push_back(static_cast<int>(models::limited_value(sd[k], join_path("/stage_device", k), device)));
  }
  const Json& devs = require_array(j, "device_ops", "");
  if (static_cast<int>(devs.size()) != s.num_devices)
    throw InputError("/device_ops: expected " + std::to_string(s.num_devices) + " op lists");
  for (size_t d = 0; d < devs.size(); ++d) {
    const std::string at = join_path("/device_ops", d);
    if (!devs[d].is_array()) throw InputError(at + ": expected an array of ops");
    std::vector<Op> ops;
    for (size_t k = 0; k < devs[d].size(); ++k) {
      const std::string ot = join_path(at, k);
      const Json& o = devs[d][k];
      Op op;
      op.kind = parse_op_kind(get_string(o, "op", ot), ot + "/op");
      op.stage = models::get_limited_int(o, "stage", ot, {-1, s.num_stages - 1});
      op.micro_batch = models::get_limited_int(o, "micro_batch", ot, {-1, s.num_micro_batches - 1});
      op.peer = models::get_limited_int_or(o, "peer", ot, -1, {-1, s.num_devices - 1});
      op.bytes = models::get_limited_or(o, "bytes", ot, 0, lim::kBytes);
      ops.push_back(op);
    }
    s.device_ops.push_back(std::move(ops));
  }
  if (j.contains("stage_replicas")) {
    const Json& sr = require_array(j, "stage_replicas", "");
    if (static_cast<int>(sr.size()) != s.num_stages)
      throw InputError("/stage_replicas: expected " + std::to_string(s.num_stages) + " entries");
    for (size_t k = 0; k < sr.size(); ++k) {
      const std::string at = "/stage_replicas/" + std::to_string(k);
      if (!sr[k].is_array() || sr[k].empty()) throw InputError(at + ": expected a non-empty array of devices");
      std::vector<int> devs;
      for (size_t i = 0; i < sr[k].size(); ++i) {
        devs.push_back(static_cast<int>(models::limited_value(sr[k][i], join_path(at, i), device)));
      }
      s.stage_replicas.push_back(std::move(devs));
    }
  }
  return s;
}

}  // namespace pw::planner
