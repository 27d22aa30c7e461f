// Schedule generators: exact op orders and bad parameters.
#include <doctest/doctest.h>

#include "models/error.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"

using namespace pw;
using namespace pw::planner;

namespace {
std::string order(const Schedule& s, int d) {
  std::string out;
  for (const Op& op : s.device_ops[d]) out += (out.empty() ? "" : " ") + op_label(op);
  return out;
}
}  // namespace

TEST_CASE("gpipe and 1f1b orders") {
  const Schedule g = make_schedule(ScheduleKind::gpipe, 2, 3);
  CHECK(order(g, 0) == "F(0,0) F(0,1) F(0,2) BW(0,2) BW(0,1) BW(0,0) step");
  const Schedule o = make_schedule(ScheduleKind::one_f_one_b, 3, 4);
  CHECK(order(o, 0) == "F(0,0) F(0,1) F(0,2) BW(0,0) F(0,3) BW(0,1) BW(0,2) BW(0,3) step");
  CHECK(order(o, 2) == "F(2,0) BW(2,0) F(2,1) BW(2,1) F(2,2) BW(2,2) F(2,3) BW(2,3) step");
  const Schedule few = make_schedule(ScheduleKind::one_f_one_b, 4, 2);
  CHECK(order(few, 0) == "F(0,0) F(0,1) BW(0,0) BW(0,1) step");
}

TEST_CASE("interleaved-1f1b (Megatron order) with 2 devices, 2 chunks, 2 micro-batches") {
  const Schedule s = make_schedule(ScheduleKind::interleaved_1f1b, 2, 2, 2);
  CHECK(s.num_stages == 4);
  CHECK(s.stage_device == std::vector<int>{0, 1, 0, 1});
  CHECK(order(s, 0) == "F(0,0) F(0,1) F(2,0) F(2,1) BW(2,0) BW(2,1) BW(0,0) BW(0,1) step");
  CHECK(order(s, 1) == "F(1,0) F(1,1) F(3,0) BW(3,0) F(3,1) BW(3,1) BW(1,0) BW(1,1) step");
}

TEST_CASE("zb-h1 and zb-h2 orders") {
  const Schedule h1 = make_schedule(ScheduleKind::zb_h1, 2, 3);
  CHECK(order(h1, 0) == "F(0,0) F(0,1) B(0,0) W(0,0) F(0,2) B(0,1) W(0,1) B(0,2) W(0,2) step");
  CHECK(order(h1, 1) == "F(1,0) B(1,0) F(1,1) B(1,1) W(1,0) F(1,2) B(1,2) W(1,1) W(1,2) step");
  const Schedule h2 = make_schedule(ScheduleKind::zb_h2, 2, 4);
  CHECK(order(h2, 0) == "F(0,0) F(0,1) F(0,2) B(0,0) W(0,0) F(0,3) B(0,1) W(0,1) B(0,2) W(0,2) B(0,3) W(0,3) step");
  CHECK(order(h2, 1) == "F(1,0) B(1,0) F(1,1) B(1,1) F(1,2) B(1,2) W(1,0) F(1,3) B(1,3) W(1,1) W(1,2) W(1,3) step");
}

TEST_CASE("asynchronous schedules: 1f1b order, no step") {
  for (ScheduleKind k : {ScheduleKind::pipedream_async, ScheduleKind::two_bw}) {
    const Schedule s = make_schedule(k, 2, 3);
    CHECK(order(s, 0) == "F(0,0) F(0,1) BW(0,0) F(0,2) BW(0,1) BW(0,2)");
  }
}

TEST_CASE("every generated schedule validates") {
  for (ScheduleKind k : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved_1f1b,
                         ScheduleKind::zb_h1, ScheduleKind::zb_h2, ScheduleKind::pipedream_async, ScheduleKind::two_bw})
    for (int p : {1, 2, 3, 5, 8})
      for (int mult : {1, 2, 3})
        for (int v : {1, 2, 3}) {
          if (v > 1 && k != ScheduleKind::interleaved_1f1b) continue;
          const int m = k == ScheduleKind::interleaved_1f1b ? p * mult : mult + p - 2 + (mult > 1 ? 1 : 0);
          CAPTURE(k);
          CAPTURE(p);
          CAPTURE(m);
          const Schedule s = make_schedule(k, p, std::max(1, m), v);
          CHECK_NOTHROW(validate_schedule(s));
          Json j;
          to_json(j, s);
          CHECK(schedule_from_json(j).device_ops == s.device_ops);
        }
}

TEST_CASE("impossible parameters") {
  CHECK_THROWS_AS(make_schedule(ScheduleKind::one_f_one_b, 0, 4), InputError);
  CHECK_THROWS_AS(make_schedule(ScheduleKind::one_f_one_b, 4, 0), InputError);
  CHECK_THROWS_AS(make_schedule(ScheduleKind::interleaved_1f1b, 4, 6, 2), InputError);
  CHECK_THROWS_AS(make_schedule(ScheduleKind::gpipe, 4, 8, 2), InputError);
  CHECK_THROWS_AS(make_schedule(ScheduleKind::interleaved_1f1b, 4, 8, 0), InputError);
}
