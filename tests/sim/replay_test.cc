// Trace replay (sim/replay.h): a trace the simulator wrote replays exactly; durations that
// differ from the prediction are all cost-model error; a gap the simulator does not know is
// all scheduling error. Hand-checkable 2-stage cases.
#include "sim/replay.h"

#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "models/error.h"
#include "planner/schedule_gen.h"
#include "sim/trace_io.h"
#include "tests/sim/stacked_run.h"

namespace pw::sim {
namespace {

using planner::OpKind;

StageCosts costs(int64_t f, int64_t b, int64_t w, int64_t step) {
  StageCosts c = StageCosts::uniform(2, f, b, w);
  c.step_ns = {step, step};
  return c;
}

Trace simulated(const planner::Schedule& s, const StageCosts& c, int iterations, const Network& net = {}) {
  return stacked_run(
      s, iterations, 1000, [&c](int) { return c; }, net);
}

TEST_CASE("replay of a synthetic trace is exact (every schedule kind of the grid)") {
  for (auto kind : {planner::ScheduleKind::gpipe, planner::ScheduleKind::one_f_one_b, planner::ScheduleKind::zb_h1}) {
    const planner::Schedule s = planner::make_schedule(kind, 2, 4, 1);
    const StageCosts c = costs(1000, 1500, 700, 300);
    const Trace t = simulated(s, c, 3);
    const ReplayResult r = replay(s, t, c, 1, 2);
    CHECK(r.first_iteration == 1);
    CHECK(r.iterations == 2);
    CHECK(r.measured_ns == r.replayed_ns);
    CHECK(r.replayed_ns == r.predicted_ns);
    CHECK(r.scheduling_error_ns() == 0);
    CHECK(r.cost_model_error_ns() == 0);
    for (const OpKindError& e : r.ops) CHECK(e.error_ns() == 0);
  }
  const planner::Schedule il = planner::make_schedule(planner::ScheduleKind::interleaved_1f1b, 2, 4, 2);
  StageCosts c4 = StageCosts::uniform(4, 500, 800, 300);
  const ReplayResult r = replay(il, simulated(il, c4, 1), c4);
  CHECK(r.measured_ns == r.replayed_ns);
  CHECK(r.cost_model_error_ns() == 0);
}

TEST_CASE("replay with the runtime's hand-off latency: exact when the run paid it, scheduling error when not") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 2, 4, 1);
  const StageCosts c = costs(1000, 1500, 700, 300);
  const int64_t h = 250;
  const Trace t = simulated(s, c, 2, Network::fixed(h));
  const ReplayResult with = replay(s, t, c, 0, 2, h);
  CHECK(with.measured_ns == with.replayed_ns);
  CHECK(with.replayed_ns == with.predicted_ns);
  // The trace's transfers carry their latency: replayed from them, exact even when replay()
  // is told nothing of the hand-off (the prediction then charges none: cost-model error).
  const ReplayResult told_nothing = replay(s, t, c, 0, 2, 0);
  CHECK(told_nothing.measured_ns == told_nothing.replayed_ns);
  CHECK(told_nothing.predicted_ns < told_nothing.replayed_ns);
  // A trace without its transfers (written before they were recorded): the replay charges the
  // hand-off given; with none, it runs short. 1F1B on 2 stages x 4 micro-batches: the critical
  // path crosses the cut twice per micro-batch of the warm-up and drain.
  Trace bare = t;
  std::erase_if(bare.events, [](const TraceEvent& e) { return e.is_transfer; });
  const ReplayResult bare_with = replay(s, bare, c, 0, 2, h);
  CHECK(bare_with.measured_ns == bare_with.replayed_ns);
  const ReplayResult without = replay(s, bare, c, 0, 2, 0);
  CHECK(without.replayed_ns < without.measured_ns);
  CHECK(without.cost_model_error_ns() == 0);
  CHECK(without.scheduling_error_ns() < 0);
  CHECK_THROWS_AS(replay(s, t, c, 0, 2, -1), InputError);
  RunTrace rt;
  rt.stages = 2;
  rt.micro_batches = 4;
  rt.has_predicted = true;
  rt.predicted = c;
  rt.handoff_ns = h;
  rt.trace = t;
  CHECK(run_trace_from_json(run_trace_to_json(rt)).handoff_ns == h);
  rt.handoff_ns = 0;
  CHECK_FALSE(run_trace_to_json(rt).contains("handoff_ns"));
  CHECK(run_trace_from_json(run_trace_to_json(rt)).handoff_ns == 0);
  CHECK_FALSE(run_trace_to_json(rt)["predicted"].contains("data_ns"));
  CHECK(run_trace_from_json(run_trace_to_json(rt)).predicted.data_ns.empty());
  rt.predicted.data_ns = {0, 400};
  CHECK(run_trace_from_json(run_trace_to_json(rt)).predicted.data_ns == std::vector<int64_t>{0, 400});
}

TEST_CASE("replay: the predicted data phase is in the prediction, not in the replay (the run's ops show it)") {
  // gpipe, 2 stages x 2 micro-batches; device 1 first needs F(0,0) at 100: a predicted draw
  // of 300 on device 1 delays the prediction by 200. The trace (written without a draw) replays
  // as measured.
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::gpipe, 2, 2, 1);
  StageCosts c = costs(100, 200, 0, 0);
  const Trace t = simulated(s, c, 1);
  c.data_ns = {0, 300};
  const ReplayResult r = replay(s, t, c);
  CHECK(r.measured_ns == 900);
  CHECK(r.replayed_ns == 900);
  CHECK(r.predicted_ns == 1100);
  CHECK(r.scheduling_error_ns() == 0);
}

TEST_CASE("replay: iteration times are medians, so one hiccup does not move them") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::gpipe, 2, 2, 1);
  const StageCosts c = costs(100, 200, 0, 0);
  Trace t = simulated(s, c, 3);
  // Iteration 1's last op started 5000 ns late (the machine paused the worker).
  TraceEvent* last = nullptr;
  for (TraceEvent& e : t.events)
    if (e.iteration == 1 && (!last || e.end_ns > last->end_ns)) last = &e;
  REQUIRE(last);
  last->start_ns += 5000;
  last->end_ns += 5000;
  const ReplayResult r = replay(s, t, c, 0, 3);
  CHECK(r.measured_ns == 900);
  CHECK(r.replayed_ns == 900);
  CHECK(r.scheduling_error_ns() == 0);
}

TEST_CASE("replay: slower ops are cost-model error, itemized per stage and op kind") {
  // gpipe, 2 stages, 2 micro-batches, F = 100, BW = 200 predicted; stage 1's F measured 150.
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::gpipe, 2, 2, 1);
  const StageCosts pred = costs(100, 200, 0, 0);
  StageCosts real = pred;
  real.forward_ns[1] = 150;
  const ReplayResult r = replay(s, simulated(s, real, 1), pred);
  // Predicted: F0 0-100, 100-200; F1 100-200, 200-300; BW1 300-500, 500-700; BW0 500-700, 700-900.
  CHECK(r.predicted_ns == 900);
  // Measured: F1 100-250, 250-400; BW1 400-600, 600-800; BW0 600-800, 800-1000.
  CHECK(r.measured_ns == 1000);
  CHECK(r.replayed_ns == 1000);
  CHECK(r.cost_model_error_ns() == -100);
  CHECK(r.scheduling_error_ns() == 0);
  bool found = false;
  for (const OpKindError& e : r.ops)
    if (e.stage == 1 && e.kind == OpKind::F) {
      found = true;
      CHECK(e.count == 2);
      CHECK(e.predicted_ns == 100);
      CHECK(e.measured_ns == 150);
      CHECK(e.error_ns() == -100);
    }
  CHECK(found);
}

TEST_CASE("replay: a gap the simulator does not know is scheduling error") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::gpipe, 2, 2, 1);
  const StageCosts c = costs(100, 200, 0, 0);
  Trace t = simulated(s, c, 1);
  // The last op of the iteration started 50 ns late: a runtime hand-off.
  TraceEvent* last = &t.events.front();
  for (TraceEvent& e : t.events)
    if (e.end_ns > last->end_ns) last = &e;
  last->start_ns += 50;
  last->end_ns += 50;
  const ReplayResult r = replay(s, t, c);
  CHECK(r.measured_ns == 950);
  CHECK(r.replayed_ns == 900);
  CHECK(r.scheduling_error_ns() == -50);
  CHECK(r.cost_model_error_ns() == 0);
}

// One iteration of `s` simulated with hand-off `h`, its trace marked as a run's ("measured"),
// for the cases below to turn into what the runtime records.
Trace as_measured(const planner::Schedule& s, const StageCosts& c, int64_t h) {
  SimOptions o;
  o.record_trace = true;
  Trace t = simulate(s, c, Network::fixed(h), o).trace;
  t.source = "measured";
  return t;
}

TEST_CASE("replay: a message that waited for a busy receiver is not transfer cost (measured traces)") {
  // gpipe, 2 stages, 2 micro-batches, F 100, B 200, hand-off 10. Predicted: device 1 runs
  // F0 [110, 210], F1 [210, 310], then the backwards; 920 ns. In the run (a measured trace,
  // whose transfers end when the receiver took the message), device 1 started F0 50 ns after
  // taking its input (a hiccup the simulator does not know), so F1's input, handed off at 200,
  // waited until device 1 was free at 260; everything after moved by 50: 970 ns.
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::gpipe, 2, 2, 1);
  const StageCosts c = costs(100, 200, 0, 0);
  const int64_t h = 10;
  Trace t = as_measured(s, c, h);
  REQUIRE(t.events.size() > 0);
  for (TraceEvent& e : t.events) {
    const bool late = e.is_transfer ? e.kind != OpKind::F : (e.device == 1 || e.start_ns >= 500);
    if (late) {
      e.start_ns += 50;
      e.end_ns += 50;
    }
    if (e.is_transfer && e.kind == OpKind::F && e.micro_batch == 1) {
      CHECK(e.start_ns == 200);
      e.end_ns = 260;  // taken when device 1 finished F0
    }
  }
  const ReplayResult r = replay(s, t, c, 0, 1, h);
  CHECK(r.predicted_ns == 920);
  CHECK(r.measured_ns == 970);
  // The wait is the receiver's (scheduling error), not the transfer's: the replay starts F1 as
  // soon as device 1 is free, and the hiccup itself is all that is missing.
  CHECK(r.replayed_ns == 920);
  CHECK(r.scheduling_error_ns() == -50);
  CHECK(r.cost_model_error_ns() == 0);
  // The same trace read as a simulated one (transfers end on arrival) keeps the 60 ns as the
  // transfer's latency, and the replay waits for it.
  t.source = "predicted";
  const ReplayResult q = replay(s, t, c, 0, 1, h);
  CHECK(q.replayed_ns == 970);
  CHECK(q.cost_model_error_ns() == -50);
}

TEST_CASE("replay: a hand-off stamped inside the sending op counts from the op's end (measured traces)") {
  // The runtime stamps a message when it hands it off, records the sending op's end after the
  // hand-off (waking the receiver is the sender's work), and ends the transfer when the
  // receiver takes the message (when it starts the op that needs it). Here every hand-off is
  // stamped 5 ns before its op's end; the replay counts each transfer from the op's end (or
  // from the receiver becoming free) and is exact.
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 2, 4, 1);
  const StageCosts c = costs(100, 200, 0, 50);
  const int64_t h = 10;
  Trace t = as_measured(s, c, h);
  const auto consumer_start = [&t](const TraceEvent& x) {
    for (const TraceEvent& e : t.events)
      if (!e.is_transfer && e.device == x.dst_device && e.micro_batch == x.micro_batch &&
          (x.kind == OpKind::F ? e.kind == OpKind::F && e.stage == x.stage + 1
                               : e.kind != OpKind::F && e.stage == x.stage - 1))
        return e.start_ns;
    FAIL("no consumer");
    return int64_t{0};
  };
  int transfers = 0;
  for (TraceEvent& e : t.events)
    if (e.is_transfer) {
      e.start_ns -= 5;
      e.end_ns = consumer_start(e);
      ++transfers;
    }
  REQUIRE(transfers == 8);  // each of the 4 micro-batches: its forward and its backward cross devices
  const ReplayResult r = replay(s, t, c, 0, 1, h);
  CHECK(r.replayed_ns == r.measured_ns);
  CHECK(r.replayed_ns == r.predicted_ns);
  // Neither the early stamp nor a wait for a busy receiver is charged to the transfer.
  for (const OpKindError& e : r.ops)
    if (e.kind == OpKind::send) CHECK(e.measured_ns <= static_cast<double>(h));
}

TEST_CASE("replay: a receiver woken late is replayed exactly and itemized as transfer (send) cost") {
  // 1f1b, 2 stages, 2 micro-batches, hand-off 100 predicted. In the run, the first forward
  // transfer of every iteration (F of stage 0, micro-batch 0 -> device 1) took 900 instead:
  // device 1's worker woke late (another thread held its core at the iteration's start).
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 2, 2, 1);
  const StageCosts c = costs(1000, 1500, 0, 200);
  const int64_t h = 100;
  SimOptions late;
  late.iterations = 1;
  late.record_trace = true;
  late.transfer_latency = [](const planner::Op& op, int, int64_t modeled) -> int64_t {
    return op.kind == OpKind::F && op.stage == 0 && op.micro_batch == 0 ? 900 : modeled;
  };
  const Trace t = simulate(s, c, Network::fixed(h), late).trace;
  const ReplayResult r = replay(s, t, c, 0, 1, h);
  // Device 1 is on the critical path from its first forward: the whole 800 ns show.
  CHECK(r.predicted_ns + 800 == r.measured_ns);
  CHECK(r.replayed_ns == r.measured_ns);
  CHECK(r.scheduling_error_ns() == 0);
  CHECK(r.cost_model_error_ns() == -800);
  int rows = 0;
  for (const OpKindError& e : r.ops) {
    if (e.kind != OpKind::send) {
      CHECK(e.error_ns() == 0);
      continue;
    }
    ++rows;
    CHECK(e.predicted_ns == h);
    // Stage 0 sends 2 forwards (one late), stage 1 sends 2 backwards.
    CHECK(e.count == 2);
    CHECK(e.measured_ns == (e.stage == 0 ? (900.0 + 100.0) / 2 : 100.0));
  }
  CHECK(rows == 2);
}

TEST_CASE("replay: a missing op and iterations out of range are input errors, run-trace JSON round-trips") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 2, 2, 1);
  const StageCosts c = costs(100, 200, 50, 10);
  Trace t = simulated(s, c, 2);
  CHECK_THROWS_AS(replay(s, t, c, 1, 2), InputError);
  RunTrace rt;
  rt.schedule = s.kind;
  rt.stages = 2;
  rt.micro_batches = 2;
  rt.warmup_iterations = 1;
  rt.has_predicted = true;
  rt.predicted = c;
  rt.trace = t;
  const RunTrace back = run_trace_from_json(run_trace_to_json(rt));
  CHECK(back.schedule == s.kind);
  CHECK(back.warmup_iterations == 1);
  CHECK(back.predicted.forward_ns == c.forward_ns);
  CHECK(back.predicted.step_ns == c.step_ns);
  CHECK(back.trace.events.size() == t.events.size());
  t.events.erase(t.events.begin());
  CHECK_THROWS_WITH_AS(replay(s, t, c), doctest::Contains("replay: the trace has no"), InputError);
}

TEST_CASE("replay: an iteration with no compute ops and an iteration numbered INT_MAX are handled (fuzz)") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 2, 2, 1);
  const StageCosts c = costs(100, 200, 50, 10);
  Trace t = simulated(s, c, 3);
  // Iteration 1 emptied of compute ops: its span was once INT64_MIN - INT64_MAX (overflow).
  std::erase_if(t.events, [](const TraceEvent& e) { return e.iteration == 1 && !e.is_transfer; });
  CHECK_THROWS_WITH_AS(replay(s, t, c, 0, 3), doctest::Contains("no compute ops in iteration 1"), InputError);
  // The last iteration renumbered INT_MAX: counting the trace's iterations once overflowed int.
  Trace last = simulated(s, c, 1);
  for (TraceEvent& e : last.events) e.iteration = std::numeric_limits<int>::max();
  const ReplayResult r = replay(s, last, c, -1, 1);
  CHECK(r.first_iteration == std::numeric_limits<int>::max());
  CHECK(r.iterations == 1);
  CHECK(r.measured_ns == r.replayed_ns);
  CHECK(format_replay(r).find("2147483647..2147483647") != std::string::npos);
  CHECK_THROWS_WITH_AS(replay(s, last, c, 0, 0), doctest::Contains("no compute ops in iteration 0"), InputError);
}

}  // namespace
}  // namespace pw::sim
