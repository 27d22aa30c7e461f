// Replicated schedules (planner/schedule_replicas.h): the round-robin op lists, equality with
// make_schedule without replicas, validity for many shapes, the validator's refusals, JSON.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "models/error.h"
#include "planner/schedule_csv.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_replicas.h"
#include "planner/schedule_validate.h"

using namespace pw::planner;

namespace {

std::vector<std::string> labels(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const Op& op : ops) out.push_back(op_label(op));
  return out;
}

const ScheduleKind kKinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::pipedream_async,
                               ScheduleKind::two_bw};

}  // namespace

TEST_CASE("replicated schedule: one replica per stage is make_schedule") {
  for (ScheduleKind k : kKinds)
    for (int p : {1, 2, 4})
      for (int m : {1, 3, 8}) {
        CAPTURE(to_string(k));
        const Schedule a = make_replicated_schedule(k, std::vector<int>(p, 1), m, std::vector<bool>(p, true));
        const Schedule b = make_schedule(k, p, m);
        CHECK(a.stage_replicas.empty());
        CHECK(a.stage_device == b.stage_device);
        CHECK(a.device_ops == b.device_ops);
      }
}

TEST_CASE("replicated schedule: 1f1b, stage 0 on two replicas, round-robin and warm-up ceil(D_s / r_s) - 1") {
  // D_0 = 3 devices from stage 0 on, r_0 = 2: warm-up ceil(3/2) - 1 = 1 per replica; stage 1: 0.
  const Schedule s = make_replicated_schedule(ScheduleKind::one_f_one_b, {2, 1}, 4, {true, true});
  validate_schedule(s);
  CHECK(s.num_devices == 3);
  CHECK(s.stage_device == std::vector<int>{0, 2});
  CHECK(s.stage_replicas == std::vector<std::vector<int>>{{0, 1}, {2}});
  CHECK(s.device_of(0, 3) == 1);
  CHECK(s.device_of(1, 3) == 2);
  CHECK(labels(s.device_ops[0]) ==
        std::vector<std::string>{"F(0,0)", "F(0,2)", "BW(0,0)", "BW(0,2)", "allreduce(0)", "step"});
  CHECK(labels(s.device_ops[1]) ==
        std::vector<std::string>{"F(0,1)", "F(0,3)", "BW(0,1)", "BW(0,3)", "allreduce(0)", "step"});
  CHECK(labels(s.device_ops[2]) == std::vector<std::string>{"F(1,0)", "BW(1,0)", "F(1,1)", "BW(1,1)", "F(1,2)",
                                                            "BW(1,2)", "F(1,3)", "BW(1,3)", "step"});
  // Asynchronous: the all-reduce follows each backward of the replica, no step.
  const Schedule a = make_replicated_schedule(ScheduleKind::pipedream_async, {2, 1}, 4, {true, false});
  validate_schedule(a);
  CHECK(labels(a.device_ops[1]) ==
        std::vector<std::string>{"F(0,1)", "F(0,3)", "BW(0,1)", "allreduce(0,1)", "BW(0,3)", "allreduce(0,3)"});
  // gpipe: forwards ascending, backwards descending.
  const Schedule g = make_replicated_schedule(ScheduleKind::gpipe, {1, 3}, 5, {});
  validate_schedule(g);
  CHECK(labels(g.device_ops[2]) == std::vector<std::string>{"F(1,1)", "F(1,4)", "BW(1,4)", "BW(1,1)", "step"});
}

TEST_CASE("replicated schedule: valid (no deadlock) for many replica shapes") {
  const std::vector<std::vector<int>> shapes = {{2}, {3, 1}, {1, 3}, {2, 2}, {3, 1, 2}, {1, 2, 1, 4}, {4, 4, 1}};
  for (ScheduleKind k : kKinds)
    for (const auto& r : shapes)
      for (int m : {1, 2, 5, 12}) {
        const int mm = is_synchronous(k) ? m : round_robin_micro_batches(m, r);
        CAPTURE(to_string(k));
        CAPTURE(mm);
        const Schedule s = make_replicated_schedule(k, r, mm, std::vector<bool>(r.size(), true));
        CHECK_NOTHROW(validate_schedule(s));
      }
}

TEST_CASE("replicated schedule: round-robin period and refusals") {
  CHECK(round_robin_micro_batches(1, {3, 1}) == 6);  // lcm 3; stage 0 needs 3 * ceil(4/3) = 6
  CHECK(round_robin_micro_batches(4, {2, 1}) == 4);
  CHECK(round_robin_micro_batches(1, {1, 1, 1}) == 3);
  CHECK_THROWS_AS(make_replicated_schedule(ScheduleKind::zb_h1, {2, 1}, 4), pw::InputError);
  CHECK_THROWS_AS(make_replicated_schedule(ScheduleKind::pipedream_async, {2, 1}, 3), pw::InputError);
  CHECK_THROWS_AS(make_replicated_schedule(ScheduleKind::gpipe, {2, 0}, 3), pw::InputError);
  CHECK_THROWS_AS(make_replicated_schedule(ScheduleKind::gpipe, {2, 1}, 3, {true}), pw::InputError);
}

TEST_CASE("schedule validator: replicated schedules that cannot run") {
  const Schedule good = make_replicated_schedule(ScheduleKind::one_f_one_b, {2, 1}, 4, {true, true});
  auto rejects = [](const Schedule& s, const std::string& needle) {
    try {
      validate_schedule(s);
      FAIL("accepted");
    } catch (const pw::InputError& e) { CHECK(std::string(e.what()).find(needle) != std::string::npos); }
  };
  Schedule s = good;
  std::swap(s.device_ops[0][1], s.device_ops[1][1]);  // F(0,2) on replica 1, F(0,3) on replica 0
  rejects(s, "micro-batch 3 of stage 0 is on device 1");
  s = good;
  s.stage_replicas[0] = {1, 0};
  rejects(s, "is not stage_device[0]");
  s = good;
  s.stage_replicas[1] = {2, 1};
  rejects(s, "runs two replicas");
  s = good;
  s.device_ops[1].erase(s.device_ops[1].end() - 2);  // replica 1 never joins the all-reduce
  rejects(s, "waits at allreduce(0) for the other replicas of stage 0");
  // Asynchronous replicas all-reduce on their own: one without all-reduces does not block another.
  s = make_replicated_schedule(ScheduleKind::pipedream_async, {2, 1}, 4, {true, false});
  std::erase_if(s.device_ops[1], [](const Op& op) { return op.kind == OpKind::allreduce; });
  CHECK_NOTHROW(validate_schedule(s));
  // ... but each follows its own backward.
  s = make_replicated_schedule(ScheduleKind::pipedream_async, {2, 1}, 4, {true, false});
  std::swap(s.device_ops[0][2], s.device_ops[0][3]);  // allreduce(0,0) before BW(0,0)
  rejects(s, "waits at allreduce(0,0) for BW(0,0)");
  s = make_replicated_schedule(ScheduleKind::pipedream_async, {2, 1}, 4, {true, false});
  s.num_micro_batches = 5;
  rejects(s, "multiple of 2");
}

TEST_CASE("schedule JSON: stage_replicas round-trip") {
  const Schedule s = make_replicated_schedule(ScheduleKind::pipedream_async, {3, 1}, 6, {true, false});
  pw::Json j;
  to_json(j, s);
  CHECK(j["stage_replicas"] == pw::Json::array({pw::Json::array({0, 1, 2}), pw::Json::array({3})}));
  const Schedule b = schedule_from_json(j);
  CHECK(b.stage_replicas == s.stage_replicas);
  CHECK(b.device_ops == s.device_ops);
  pw::Json bad = j;
  bad["stage_replicas"][1] = pw::Json::array({9});
  CHECK_THROWS_AS(schedule_from_json(bad), pw::InputError);
  pw::Json plain;
  to_json(plain, make_schedule(ScheduleKind::gpipe, 2, 2));
  CHECK_FALSE(plain.contains("stage_replicas"));
}

TEST_CASE("schedule CSV: a replicated schedule is an export error, not a collapsed one") {
  const Schedule s = make_replicated_schedule(ScheduleKind::one_f_one_b, {3, 1}, 6);
  try {
    schedule_to_csv(s);
    FAIL("exported");
  } catch (const pw::InputError& e) {
    CHECK(std::string(e.what()).find("stage 0 has 3 replicas") != std::string::npos);
  }
}
