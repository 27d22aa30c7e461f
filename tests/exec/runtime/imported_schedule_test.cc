// A schedule imported from PyTorch's CSV action format runs on the executor
// (PipelineRunOptions::schedule, exec/runtime/run_imported.h) and trains as the same schedule
// built in: bit for bit when the CSV is our own export, within 1e-5 for hand-written CSVs of
// PyTorch's documented format (1F1B with idle cells, a V-shaped placement of 4 stages on 2
// ranks, zero bubble with I and W) against the built-in schedule on the same layer cut.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "exec/runtime/run_imported.h"
#include "exec/runtime/run_pipeline.h"
#include "models/error.h"
#include "planner/schedule_csv.h"
#include "planner/schedule_gen.h"
#include "tests/exec/runtime/same_training.h"

using namespace pw;
using namespace pw::exec;
using namespace pw::exec::testing;
using planner::ScheduleKind;

namespace {

PipelineRunResult run_builtin(const models::Model& m, ScheduleKind kind, int stages, int mbs, int chunks = 1) {
  const int M = static_cast<int>(m.batch()) / mbs;
  return run_pipeline(m, even_plan(m, stages, M, mbs, kind, false, chunks), compare_options());
}

// Runs the CSV and checks that every device ran exactly the CSV's row, in its order, in
// every iteration (so a runtime that ignored the imported schedule would fail here).
PipelineRunResult run_csv(const models::Model& m, const std::string& csv, int mbs) {
  planner::Schedule s = planner::schedule_from_csv(csv, "test.csv");
  PipelineRunOptions o = compare_options();
  const planner::Plan plan = even_plan_for_schedule(m, s, mbs, false, "test.csv");
  o.schedule = s;
  PipelineRunResult r = run_pipeline(m, plan, o);
  for (int it = 0; it < o.steps; ++it)
    for (int d = 0; d < s.num_devices; ++d) {
      std::vector<sim::TraceEvent> ran;
      for (const auto& e : r.trace.events)
        if (!e.is_transfer && e.device == d && e.iteration == it && e.kind != planner::OpKind::step) ran.push_back(e);
      std::stable_sort(ran.begin(), ran.end(), [](auto& a, auto& b) { return a.start_ns < b.start_ns; });
      std::vector<planner::Op> want;
      for (const auto& op : s.device_ops[d])
        if (op.kind != planner::OpKind::step) want.push_back(op);
      CAPTURE(d);
      CAPTURE(it);
      REQUIRE(ran.size() == want.size());
      for (size_t k = 0; k < ran.size(); ++k) {
        CHECK(ran[k].kind == want[k].kind);
        CHECK(ran[k].stage == want[k].stage);
        CHECK(ran[k].micro_batch == want[k].micro_batch);
      }
    }
  return r;
}

void check_identical(const PipelineRunResult& a, const PipelineRunResult& b) {
  REQUIRE(a.losses.size() == b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) CHECK(a.losses[i] == b.losses[i]);
  REQUIRE(a.final_weights.size() == b.final_weights.size());
  for (size_t s = 0; s < a.final_weights.size(); ++s) {
    REQUIRE(a.final_weights[s].size() == b.final_weights[s].size());
    for (size_t k = 0; k < a.final_weights[s].size(); ++k)
      CHECK(relative_difference(a.final_weights[s][k].second, b.final_weights[s][k].second) == 0.0);
  }
}

}  // namespace

TEST_CASE("imported schedule: our own CSV export runs bit for bit as the built-in schedule (1f1b, zb-h1, gpipe)") {
  const models::Model m = small_zoo_model("gpt", 2, 4);
  for (ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::zb_h1, ScheduleKind::gpipe}) {
    CAPTURE(planner::to_string(kind));
    const std::string csv = planner::schedule_to_csv(planner::make_schedule(kind, 2, 4, 1));
    check_identical(run_csv(m, csv, 2), run_builtin(m, kind, 2, 2));
  }
}

TEST_CASE("imported schedule: hand-written PyTorch CSVs train as the built-in schedule on the same cut") {
  const models::Model gpt = small_zoo_model("gpt", 3, 4);
  SUBCASE("1F1B, 2 ranks, 4 micro-batches, idle cells") {
    const std::string csv =
        "0F0,0F1,,0B0,0F2,0B1,0F3,0B2,,0B3\n"
        ",1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\n";
    check_same_training(run_csv(gpt, csv, 2), run_builtin(gpt, ScheduleKind::one_f_one_b, 2, 2));
  }
  SUBCASE("V-shape: stages 0 and 3 on rank 0, 1 and 2 on rank 1") {
    const std::string csv =
        "0F0,0F1,3F0,3B0,3F1,3B1,0B0,0B1\n"
        "1F0,1F1,2F0,2F1,2B0,1B0,2B1,1B1\n";
    const PipelineRunResult r = run_csv(gpt, csv, 4);
    // The same 4-stage cut run by the built-in interleaved schedule (stages on s mod 2).
    check_same_training(r, run_builtin(gpt, ScheduleKind::interleaved_1f1b, 2, 4, 2));
  }
  SUBCASE("zero bubble: I and W split the backward") {
    const std::string csv =
        "0F0,0F1,0F2,0I0,0F3,0I1,0W0,0I2,0W1,0I3,0W2,0W3\n"
        "1F0,1I0,1W0,1F1,1I1,1W1,1F2,1I2,1W2,1F3,1I3,1W3\n";
    check_same_training(run_csv(gpt, csv, 2), run_builtin(gpt, ScheduleKind::zb_h1, 2, 2));
  }
}

TEST_CASE("imported schedule: a CSV that does not fit the plan or the model is one line naming it") {
  const models::Model m = small_zoo_model("mlp", 1, 4);
  // 3 stages on 2 ranks: rank 0 holds two, rank 1 one.
  const planner::Schedule uneven = planner::schedule_from_csv("0F0,2F0,2B0,0B0\n1F0,1B0\n", "u.csv");
  CHECK_THROWS_WITH_AS(even_plan_for_schedule(m, uneven, 8, false, "u.csv"),
                       doctest::Contains("u.csv: 3 stages do not divide among 2 ranks"), InputError);
  const planner::Schedule two = planner::schedule_from_csv("0F0,0B0\n1F0,1B0\n", "t.csv");
  planner::Plan plan = even_plan_for_schedule(m, two, 8, false, "t.csv");
  CHECK(plan.stages.at(1).devices == std::vector<int>{1});
  CHECK_NOTHROW(check_imported_schedule(plan, two));
  plan.stages[1].devices = {0};
  CHECK_THROWS_WITH_AS(check_imported_schedule(plan, two), doctest::Contains("stage 1 runs on device 1"), InputError);
  const planner::Plan four = even_plan(m, 4, 1, 8, ScheduleKind::one_f_one_b, false);
  CHECK_THROWS_WITH_AS(check_imported_schedule(four, two), doctest::Contains("2 stages, but the plan has 4"),
                       InputError);
  // An imported schedule whose dependencies are broken (rank 1 runs B0 before F0).
  const planner::Schedule broken = planner::schedule_from_csv("0F0,0B0\n1B0,1F0\n", "b.csv");
  PipelineRunOptions o = compare_options();
  o.schedule = broken;
  CHECK_THROWS_AS(run_pipeline(m, even_plan_for_schedule(m, broken, 8, false, "b.csv"), o), InputError);
}
