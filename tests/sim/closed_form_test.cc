// Closed forms of the classic schedules, exactly to the nanosecond (equal stages, free
// transfers), DESIGN.md "Simulation semantics".
#include <doctest/doctest.h>

#include "planner/schedule_gen.h"
#include "sim/engine.h"

using namespace pw;
using planner::make_schedule;
using planner::ScheduleKind;

namespace {

sim::SimResult run(ScheduleKind kind, int p, int m, int64_t tf, int64_t tb, int64_t tw, int v = 1) {
  planner::Schedule s = make_schedule(kind, p, m, v);
  sim::StageCosts c = sim::StageCosts::uniform(p * v, tf, tb, tw);
  return sim::simulate(s, c, sim::Network{});
}

}  // namespace

TEST_CASE("gpipe and 1f1b: bubble (p-1)/(m+p-1), makespan (m+p-1)(T_F+T_B+T_W)") {
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b})
    for (int p : {1, 2, 3, 4, 8})
      for (int m : {1, 2, 3, 4, 7, 8, 16}) {
        CAPTURE(p);
        CAPTURE(m);
        const int64_t tf = 1000, tb = 1700, tw = 900;
        const sim::Report r = run(kind, p, m, tf, tb, tw).report;
        const int64_t t = tf + tb + tw;
        CHECK(r.makespan_ns == (m + p - 1) * t);
        CHECK(r.cost_ns == (m + p - 1) * t);
        CHECK(r.devices[r.bottleneck_device].busy_ns == m * t);
        // Exact rational: (cost - busy) * (m+p-1) == (p-1) * cost.
        CHECK((r.cost_ns - m * t) * (m + p - 1) == (p - 1) * r.cost_ns);
        CHECK(r.bubble_rate == doctest::Approx(double(p - 1) / (m + p - 1)).epsilon(1e-12));
      }
}

TEST_CASE("interleaved-1f1b: bubble (p-1)/(v*m+p-1)") {
  for (int p : {2, 4})
    for (int v : {2, 3, 4})
      for (int mult : {1, 2, 3}) {
        const int m = p * mult;
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        const int64_t tf = 500, tb = 1000, tw = 0;  // per chunk
        const sim::Report r = run(ScheduleKind::interleaved_1f1b, p, m, tf, tb, tw, v).report;
        const int64_t t = tf + tb + tw;
        CHECK(r.devices[r.bottleneck_device].busy_ns == int64_t(v) * m * t);
        CHECK(r.cost_ns == (int64_t(v) * m + p - 1) * t);
        CHECK(r.bubble_rate == doctest::Approx(double(p - 1) / (v * m + p - 1)).epsilon(1e-12));
      }
}

TEST_CASE("in-flight micro-batches: gpipe m, 1f1b min(p-s, m)") {
  for (int p : {1, 2, 4, 6})
    for (int m : {1, 3, 4, 9}) {
      const auto g = run(ScheduleKind::gpipe, p, m, 10, 20, 5).report;
      const auto o = run(ScheduleKind::one_f_one_b, p, m, 10, 20, 5).report;
      for (int s = 0; s < p; ++s) {
        CHECK(g.devices[s].max_in_flight == m);
        CHECK(o.devices[s].max_in_flight == std::min(p - s, m));
      }
    }
}

TEST_CASE("zb-h1: bubble time (p-1)(T_F+T_B-T_W) when T_W <= T_F, peak activations p*M_B on stage 0") {
  const int64_t mb_bytes = 1 << 20;
  for (int p : {2, 3, 4, 8})
    for (int m : {8, 16, 24})
      for (auto [tf, tb, tw] :
           {std::tuple<int64_t, int64_t, int64_t>{100, 100, 100}, {100, 150, 50}, {120, 100, 80}, {100, 100, 60}}) {
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(tf);
        CAPTURE(tw);
        planner::Schedule s = make_schedule(ScheduleKind::zb_h1, p, m);
        sim::StageCosts c = sim::StageCosts::uniform(p, tf, tb, tw);
        c.stash_bytes_per_micro_batch.assign(p, mb_bytes);
        const sim::Report r = sim::simulate(s, c, sim::Network{}).report;
        CHECK(r.cost_ns - r.devices[r.bottleneck_device].busy_ns == (p - 1) * (tf + tb - tw));
        CHECK(r.devices[r.bottleneck_device].busy_ns == m * (tf + tb + tw));
        CHECK(r.devices[0].peak_memory_bytes == p * mb_bytes);
      }
}

TEST_CASE("zb-h2: bubble time (p-1)(T_F+T_B-2T_W) when T_W <= T_F, 2T_W <= T_F+T_B, m >= 2p-1, peak (2p-1)*M_B") {
  const int64_t mb_bytes = 1000;
  for (int p : {2, 3, 4, 8})
    for (int m : {2 * p - 1, 2 * p, 3 * p + 1})
      for (auto [tf, tb, tw] :
           {std::tuple<int64_t, int64_t, int64_t>{100, 100, 100}, {100, 150, 50}, {120, 100, 80}, {100, 100, 60}}) {
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(tf);
        CAPTURE(tw);
        planner::Schedule s = make_schedule(ScheduleKind::zb_h2, p, m);
        sim::StageCosts c = sim::StageCosts::uniform(p, tf, tb, tw);
        c.stash_bytes_per_micro_batch.assign(p, mb_bytes);
        const sim::Report r = sim::simulate(s, c, sim::Network{}).report;
        CHECK(r.cost_ns - r.devices[r.bottleneck_device].busy_ns == (p - 1) * (tf + tb - 2 * tw));
        CHECK(r.devices[0].peak_memory_bytes == (2 * p - 1) * mb_bytes);
      }
}
