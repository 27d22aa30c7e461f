// Run traces of long runs (sim/run_trace.h): the last K iterations in full plus a summary of
// every iteration; replay over the kept iterations gives exactly the medians of replaying the
// full trace over the same iterations; JSON round trip and rejections.
#include "sim/run_trace.h"

#include <doctest/doctest.h>

#include <functional>

#include <set>

#include "models/error.h"
#include "planner/schedule_gen.h"
#include "sim/replay.h"
#include "tests/sim/stacked_run.h"

namespace pw::sim {
namespace {

// Iteration k simulated alone with F/B/W lasting 1000 + 37 * (k % 7) ns etc. (so medians over
// different iterations differ), placed after the previous one with a 500 ns gap.
Trace varied_run(const planner::Schedule& s, int iterations) {
  return stacked_run(s, iterations, 500, [](int k) {
    StageCosts c = StageCosts::uniform(2, 1000 + 37 * (k % 7), 1500 + 11 * (k % 5), 700);
    c.step_ns = {300, 300};
    return c;
  });
}

RunTrace run_of(const planner::Schedule& s, int iterations, int warmup) {
  RunTrace rt;
  rt.schedule = s.kind;
  rt.stages = 2;
  rt.micro_batches = 4;
  rt.warmup_iterations = warmup;
  rt.has_predicted = true;
  rt.predicted = StageCosts::uniform(2, 1000, 1500, 700);
  rt.predicted.step_ns = {300, 300};
  rt.trace = varied_run(s, iterations);
  return rt;
}

bool same(const std::vector<IterationSummary>& a, const std::vector<IterationSummary>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].iteration != b[i].iteration || a[i].start_ns != b[i].start_ns || a[i].end_ns != b[i].end_ns) return false;
  return true;
}

std::set<int> event_iterations(const Trace& t) {
  std::set<int> out;
  for (const TraceEvent& e : t.events) out.insert(e.iteration);
  return out;
}

}  // namespace

TEST_CASE("run trace of 40 iterations keeping 6: 6 in full, 40 summaries, replay = full replay of those 6") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 2, 4, 1);
  const RunTrace full = run_of(s, 40, 2);
  RunTrace kept = full;
  keep_last_iterations(kept, 6);
  CHECK(event_iterations(kept.trace) == std::set<int>{34, 35, 36, 37, 38, 39});
  // Every op of the kept iterations, nothing else: 4 F, 4 BW per stage, 1 step per device.
  CHECK(kept.trace.events.size() * 40 == full.trace.events.size() * 6);
  REQUIRE(kept.iterations.size() == 40);
  CHECK(same(kept.iterations, iteration_summaries(full.trace)));
  CHECK(kept.iterations[0].start_ns == 0);
  CHECK(replay_first_iteration(full) == 2);
  CHECK(replay_first_iteration(kept) == 34);

  const ReplayResult a = replay(s, kept.trace, kept.predicted, replay_first_iteration(kept), 0);
  const ReplayResult b = replay(s, full.trace, full.predicted, 34, 6);
  CHECK(a.first_iteration == 34);
  CHECK(a.iterations == 6);
  CHECK(a.measured_ns == b.measured_ns);
  CHECK(a.replayed_ns == b.replayed_ns);
  CHECK(a.predicted_ns == b.predicted_ns);
  REQUIRE(a.ops.size() == b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) CHECK(a.ops[i].measured_ns == b.ops[i].measured_ns);
  // The kept iterations are not the run's first ones: their medians differ from those.
  CHECK(replay(s, full.trace, full.predicted, 2, 6).measured_ns != a.measured_ns);
  // A trace the simulator wrote replays exactly, trimmed as well.
  CHECK(a.scheduling_error_ns() == 0);

  // keep >= the iteration count keeps everything; warm-up iterations still come first.
  RunTrace all = full;
  keep_last_iterations(all, 40);
  CHECK(all.trace.events.size() == full.trace.events.size());
  CHECK(replay_first_iteration(all) == 2);
  RunTrace short_run = run_of(s, 5, 3);
  keep_last_iterations(short_run, 4);
  CHECK(event_iterations(short_run.trace) == std::set<int>{1, 2, 3, 4});
  CHECK(replay_first_iteration(short_run) == 3);
}

TEST_CASE("run trace JSON: summaries round-trip, old files without them read, bad summaries are rejected") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::gpipe, 2, 4, 1);
  RunTrace rt = run_of(s, 12, 1);
  const RunTrace old = run_trace_from_json(run_trace_to_json(rt));  // no summaries: as written before
  CHECK(old.iterations.empty());
  CHECK_FALSE(run_trace_to_json(rt).contains("iterations"));
  CHECK(replay_first_iteration(old) == 1);
  keep_last_iterations(rt, 3);
  const Json j = run_trace_to_json(rt);
  REQUIRE(j.at("iterations").size() == 12);
  CHECK(j.at("iterations")[11] ==
        Json{{"iteration", 11}, {"start_ns", rt.iterations[11].start_ns}, {"end_ns", rt.iterations[11].end_ns}});
  const RunTrace back = run_trace_from_json(j);
  CHECK(same(back.iterations, rt.iterations));
  CHECK(back.trace.events.size() == rt.trace.events.size());
  CHECK(replay_first_iteration(back) == 9);

  Json bad = j;
  bad["iterations"][5]["iteration"] = 3;
  CHECK_THROWS_WITH_AS(run_trace_from_json(bad),
                       doctest::Contains("/iterations/5/iteration: expected iterations in ascending order"),
                       InputError);
  bad = j;
  bad["iterations"][2]["end_ns"] = bad["iterations"][2]["start_ns"].get<int64_t>() - 1;
  CHECK_THROWS_WITH_AS(run_trace_from_json(bad), doctest::Contains("/iterations/2"), InputError);
  bad = j;
  bad["iterations"] = Json::object();
  CHECK_THROWS_AS(run_trace_from_json(bad), InputError);
  bad = j;
  bad["iterations"][0] = 7;
  CHECK_THROWS_WITH_AS(run_trace_from_json(bad), doctest::Contains("/iterations/0"), InputError);
}

TEST_CASE("run trace JSON: counts and times beyond the limits are refused, never narrowed") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::gpipe, 2, 4, 1);
  const Json j = run_trace_to_json(run_of(s, 2, 0));
  CHECK(run_trace_from_json(j).stages == 2);
  auto message = [&](const std::function<void(Json&)>& edit) {
    Json bad = j;
    edit(bad);
    try {
      run_trace_from_json(bad);
    } catch (const InputError& e) { return std::string(e.what()); }
    return std::string();
  };
  CHECK(message([](Json& b) { b["stages"] = 4294967298LL; }) ==
        "/stages: expected an integer in [1, 65536], got 4294967298");
  CHECK(message([](Json& b) {
          b["micro_batches"] = 1e9;
        }).find("/micro_batches: expected an integer in [1, 1048576], got 1") == 0);
  CHECK(message([](Json& b) { b["handoff_ns"] = 9223372036854775807LL; }) ==
        "/handoff_ns: expected an integer in [0, 1000000000000000], got 9223372036854775807");
  CHECK(message([](Json& b) {
          b["stages"] = 3;
          b["chunks"] = 2;
        }) == "/stages: 3 is not a multiple of /chunks (2)");
  CHECK(message([](Json& b) { b["trace"]["events"][0]["device"] = 2; }) ==
        "/trace/events/0/device: expected an integer in [0, 1], got 2");
}

}  // namespace pw::sim
