// The typed choices of a PlanRequest: every word round-trips, unknown words are refused in one
// line naming where and what was expected, and the defaults are the documented ones.
#include <doctest/doctest.h>

#include <string>

#include "models/defaults.h"
#include "models/error.h"
#include "planner/plan_request.h"

using namespace pw::planner;

TEST_CASE("plan request words round-trip through their enums") {
  for (Objective o : {Objective::sync, Objective::async, Objective::pipedream})
    CHECK(parse_objective(to_string(o), "x") == o);
  for (Partitioner p : {Partitioner::dp, Partitioner::gpipe_greedy, Partitioner::even})
    CHECK(parse_partitioner(to_string(p), "x") == p);
  for (RecomputeChoice r : {RecomputeChoice::automatic, RecomputeChoice::on, RecomputeChoice::off})
    CHECK(parse_recompute_choice(to_string(r), "x") == r);
  CHECK(to_string(Partitioner::gpipe_greedy) == "gpipe-greedy");
  CHECK(to_string(RecomputeChoice::automatic) == "auto");
  CHECK(to_string(std::optional<ScheduleKind>{}) == "auto");
  CHECK(to_string(std::optional<ScheduleKind>{ScheduleKind::zb_h2}) == "zb-h2");
  CHECK(!parse_schedule_request("auto", "x").has_value());
  CHECK(parse_schedule_request("interleaved-1f1b", "x") == ScheduleKind::interleaved_1f1b);
  CHECK(parse_micro_batches_request("auto", "x") == 0);
  CHECK(parse_micro_batches_request("14", "x") == 14);
  CHECK(micro_batches_to_string(0) == "auto");
  CHECK(micro_batches_to_string(14) == "14");
}

TEST_CASE("plan request defaults: sync, dp, auto schedule and micro-batches, models' recompute default") {
  const PlanRequest r;
  CHECK(r.objective == Objective::sync);
  CHECK(r.partitioner == Partitioner::dp);
  CHECK(!r.schedule.has_value());
  CHECK(r.micro_batches == 0);
  CHECK(to_string(r.recompute) == std::string(pw::models::kDefaultRecompute));
}

TEST_CASE("unknown plan request words: one line naming the flag, the word and the words expected") {
  CHECK_THROWS_WITH_AS(parse_objective("fast", "--objective"),
                       "--objective: unknown objective \"fast\" (expected one of sync, async, pipedream)",
                       pw::InputError);
  CHECK_THROWS_WITH_AS(parse_partitioner("greedy", "--partitioner"),
                       "--partitioner: unknown partitioner \"greedy\" (expected one of dp, gpipe-greedy, even)",
                       pw::InputError);
  CHECK_THROWS_WITH_AS(parse_recompute_choice("yes", "--recompute"),
                       "--recompute: unknown recompute choice \"yes\" (expected one of auto, on, off)", pw::InputError);
  CHECK_THROWS_AS(parse_schedule_request("zigzag", "--schedule"), pw::InputError);
  for (const char* bad : {"", "0", "-3", "8x", "2.5", "99999999999999999999", "1048577"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_micro_batches_request(bad, "--micro-batches"),
                         doctest::Contains("--micro-batches: expected \"auto\" or a positive integer"), pw::InputError);
  }
  CHECK(parse_micro_batches_request("1048576", "x") == 1048576);
}
