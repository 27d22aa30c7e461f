// Validator: coverage, placement, step, deadlock messages.
#include <doctest/doctest.h>

#include "models/error.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"

using namespace pw;
using namespace pw::planner;

namespace {
std::string message(const Schedule& s) {
  try {
    validate_schedule(s);
  } catch (const InputError& e) { return e.what(); }
  return "";
}
}  // namespace

TEST_CASE("deadlock names the stuck ops") {
  Schedule s = make_schedule(ScheduleKind::one_f_one_b, 2, 2);
  // Device 1 runs BW(1,1) before F(1,1)... put its backward of micro-batch 1 first.
  s.device_ops[1] = {
      {OpKind::F, 1, 0}, {OpKind::BW, 1, 1}, {OpKind::BW, 1, 0}, {OpKind::F, 1, 1}, {OpKind::step, -1, -1}};
  const std::string msg = message(s);
  CHECK(msg.find("device 1 waits at BW(1,1) for F(1,1)") != std::string::npos);
  CHECK(msg.find("deadlock: device 0 waits at BW(0,0) for BW(1,0)") != std::string::npos);
}

TEST_CASE("missing, duplicate, misplaced ops and steps") {
  Schedule s = make_schedule(ScheduleKind::gpipe, 2, 2);
  s.device_ops[0].erase(s.device_ops[0].begin());
  CHECK(message(s).find("missing F(0,0)") != std::string::npos);
  s = make_schedule(ScheduleKind::gpipe, 2, 2);
  s.device_ops[0].insert(s.device_ops[0].begin(), Op{OpKind::F, 0, 1});
  CHECK(message(s).find("duplicate F(0,1) on device 0") != std::string::npos);
  s = make_schedule(ScheduleKind::gpipe, 2, 2);
  s.device_ops[0].insert(s.device_ops[0].begin(), Op{OpKind::F, 1, 1});
  CHECK(message(s).find("stage 1 is on device 1") != std::string::npos);
  s = make_schedule(ScheduleKind::gpipe, 2, 2);
  s.device_ops[1].pop_back();
  CHECK(message(s).find("does not end with a step") != std::string::npos);
  s = make_schedule(ScheduleKind::zb_h1, 2, 2);
  s.device_ops[0].erase(s.device_ops[0].end() - 2);
  CHECK(message(s).find("missing W(0,") != std::string::npos);
  s = make_schedule(ScheduleKind::pipedream_async, 2, 2);
  s.device_ops[0].push_back(Op{OpKind::step, -1, -1});
  CHECK(message(s).find("asynchronous") != std::string::npos);
  s = make_schedule(ScheduleKind::one_f_one_b, 2, 2);
  s.device_ops[0].insert(s.device_ops[0].begin(), Op{OpKind::send, 0, 0, 1, 10});
  CHECK(message(s).find("not supported") != std::string::npos);
  CHECK(message(make_schedule(ScheduleKind::zb_h2, 3, 5)) == "");
}
