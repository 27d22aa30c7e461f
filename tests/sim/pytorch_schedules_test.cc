// PyTorch's own schedule CSVs (compute_only format of torch.distributed.pipelining, written by
// hand from its documented action notation) import, validate and simulate to the closed forms.
#include <doctest/doctest.h>

#include "planner/schedule_csv.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"
#include "sim/engine.h"

using namespace pw;
using namespace pw::planner;

namespace {

void check_same(const Schedule& a, const Schedule& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.stage_device == b.stage_device);
  CHECK(a.device_ops == b.device_ops);
}

sim::Report simulate_uniform(const Schedule& s, int64_t f, int64_t b, int64_t w) {
  validate_schedule(s);
  return sim::simulate(s, sim::StageCosts::uniform(s.num_stages, f, b, w), sim::Network::fixed(0)).report;
}

}  // namespace

TEST_CASE("PyTorch 1F1B CSV (time-step grid with idle cells) imports, validates and simulates") {
  // Schedule1F1B, 2 ranks, 4 micro-batches, as _format_pipeline_order lays it out by time step:
  // rank 1 idles in the first step (an empty cell).
  const std::string csv =
      "0F0,0F1,0B0,0F2,0B1,0F3,0B2,,0B3\n"
      ",1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\n";
  const Schedule s = schedule_from_csv(csv, "1f1b.csv");
  CHECK(s.kind == ScheduleKind::one_f_one_b);
  CHECK(s.num_devices == 2);
  CHECK(s.num_stages == 2);
  CHECK(s.num_micro_batches == 4);
  CHECK(s.stage_device == std::vector<int>{0, 1});
  check_same(s, make_schedule(ScheduleKind::one_f_one_b, 2, 4));
  // F = 1 us, full backward = 2 us, free transfers: (m + p - 1)(F + B) = 5 * 3 us; bubble 1/5.
  const sim::Report r = simulate_uniform(s, 1000, 2000, 0);
  CHECK(r.makespan_ns == 15000);
  CHECK(r.bubble_rate == doctest::Approx(0.2));
}

TEST_CASE("PyTorch interleaved 1F1B CSV (2 ranks, 2 stages each, loop placement)") {
  // ScheduleInterleaved1F1B: stage s on rank s % 2; 4 micro-batches.
  const std::string csv =
      "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3\n"
      "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3\n";
  const Schedule s = schedule_from_csv(csv, "interleaved.csv");
  CHECK(s.kind == ScheduleKind::interleaved_1f1b);
  CHECK(s.num_stages == 4);
  CHECK(s.stage_device == std::vector<int>{0, 1, 0, 1});
  check_same(s, make_schedule(ScheduleKind::interleaved_1f1b, 2, 4, 2));
  // Equal chunks F = B = 1 us: bubble (p - 1) / (v m + p - 1) = 1/9.
  const sim::Report r = simulate_uniform(s, 1000, 1000, 0);
  CHECK(r.bubble_rate == doctest::Approx(1.0 / 9));
}

TEST_CASE("PyTorch zero-bubble CSV (I and W split) imports, validates and simulates") {
  // ZB-H1 on 2 ranks, 3 micro-batches: I = backward w.r.t. input, W = w.r.t. weights.
  const std::string csv =
      "0F0,0F1,0I0,0W0,0F2,0I1,0W1,0I2,0W2\n"
      ",1F0,1I0,1F1,1I1,1W0,1F2,1I2,1W1,1W2\n";
  const Schedule s = schedule_from_csv(csv, "zb.csv");
  CHECK(s.kind == ScheduleKind::zb_h1);
  check_same(s, make_schedule(ScheduleKind::zb_h1, 2, 3));
  // F = I = W = 1 us: busy 3m = 9 us per stage plus (p-1)(F + I - W) = 1 us of bubble.
  const sim::Report r = simulate_uniform(s, 1000, 1000, 1000);
  CHECK(r.makespan_ns == 10000);
}

TEST_CASE("a V-shaped placement (two stages on one rank, not in loop order) is read as written") {
  // ScheduleZBVZeroBubble-style placement: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.
  const std::string csv =
      "0F0,3F0,3B0,0B0\n"
      "1F0,2F0,2B0,1B0\n";
  const Schedule s = schedule_from_csv(csv, "v.csv", ScheduleKind::one_f_one_b);
  CHECK(s.stage_device == std::vector<int>{0, 1, 1, 0});
  CHECK_NOTHROW(validate_schedule(s));
  CHECK(simulate_uniform(s, 1000, 1000, 0).makespan_ns == 8000);
}
