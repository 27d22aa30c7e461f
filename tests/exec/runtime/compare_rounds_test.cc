// The prediction's profile measured in rounds between a run's steps: ProfileInRounds
// (exec/profiler.h), PredictionMeasurement and its round placement (exec/runtime/run_compare.h),
// PipelineRunOptions::between_steps (exec/runtime/run_pipeline.h) and the end-to-end clock
// leaving such pauses out (exec/runtime/run_setup.h). No timing thresholds: the clock test
// pauses for a pretend 1000 s, which no real step reaches.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "exec/profile/profiler.h"
#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_pipeline.h"
#include "exec/runtime/run_setup.h"
#include "models/error.h"
#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;

namespace {

MeasureOptions two_copies() {
  MeasureOptions o;
  o.micro_batch = 2;
  o.warmup = 1;
  o.threads = 1;
  o.co_run_workers = 2;
  o.optimizer = "sgd";
  return o;
}

PipelineRunOptions short_run() {
  PipelineRunOptions o;
  o.warmup_steps = 2;
  o.steps = 4;
  o.threads_per_worker = 1;
  o.prefetch = 0;
  o.timeout = std::chrono::seconds(60);
  return o;
}

class CountingSource final : public DataSource {
 public:
  Batch next(int64_t batch) override {
    ++draws_;
    return Batch{Tensor({batch, 2}), Tensor({batch, 1})};
  }
  std::string describe() const override { return "counting"; }
  DataState state() const override { return {0, draws_}; }
  void restore(const DataState& s) override { draws_ = s.batches; }

 private:
  int64_t draws_ = 0;
};

constexpr int64_t kPretendPauseNs = 1000'000'000'000;  // 1000 s

}  // namespace

TEST_CASE("ProfileInRounds: rounds pool their passes, per copy and in the profile") {
  const models::Model m = testing::tiny_model("mlp", 8);
  ProfileInRounds rounds(m, two_copies());
  CHECK(rounds.rounds_done() == 0);
  CHECK_THROWS_AS(rounds.profile(), InternalError);  // nothing measured yet
  CHECK_THROWS_AS(rounds.round(0), InputError);
  rounds.round(2);
  rounds.round(3);
  CHECK(rounds.rounds_done() == 2);
  CHECK(rounds.timed_passes() == 5);
  std::vector<models::Profile> per_copy;
  std::vector<LayerMeasurement> spreads;
  const models::Profile p = rounds.profile(&spreads, &per_copy);
  REQUIRE(p.measurement.has_value());
  CHECK(p.measurement->context == "in-context");
  CHECK(p.measurement->co_run_workers == 2);
  CHECK(p.measurement->reps == 5);
  REQUIRE(per_copy.size() == 2);
  CHECK(spreads.size() == p.layers.size());
  for (const models::Profile& c : per_copy) REQUIRE(c.layers.size() == p.layers.size());
  for (size_t i = 0; i < p.layers.size(); ++i) {
    CHECK(p.layers[i].forward_ns > 0);
    // The pooled median lies between the copies' own medians.
    const int64_t lo = std::min(per_copy[0].layers[i].forward_ns, per_copy[1].layers[i].forward_ns);
    const int64_t hi = std::max(per_copy[0].layers[i].forward_ns, per_copy[1].layers[i].forward_ns);
    CHECK(p.layers[i].forward_ns >= lo);
    CHECK(p.layers[i].forward_ns <= hi);
  }
  MeasureOptions isolated = two_copies();
  isolated.in_context = false;
  CHECK_THROWS_AS(ProfileInRounds(m, isolated), InputError);
}

TEST_CASE("ProfileInRounds: a round runs its copies on the threads given, when there is one per copy") {
  const models::Model m = testing::tiny_model("mlp", 8);
  ProfileInRounds rounds(m, two_copies());
  const auto threads_of = [](int n, int* calls) {
    CopyThreads t;
    t.workers = n;
    t.run = [n, calls](const std::function<void(int)>& body) {
      ++*calls;
      std::vector<std::thread> ts;
      for (int w = 0; w < n; ++w) ts.emplace_back([&body, w] { body(w); });
      for (auto& th : ts) th.join();
    };
    return t;
  };
  int two_calls = 0, three_calls = 0;
  const CopyThreads two = threads_of(2, &two_calls), three = threads_of(3, &three_calls);
  rounds.round(1, &two);
  CHECK(two_calls == 1);
  rounds.round(1, &three);  // three threads for two copies: threads of its own
  CHECK(three_calls == 0);
  CHECK(rounds.rounds_done() == 2);
  std::vector<models::Profile> per_copy;
  rounds.profile(nullptr, &per_copy);
  CHECK(per_copy.size() == 2);
}

TEST_CASE("measure_profile: in rounds, the profile still says the timed passes asked for") {
  const models::Model m = testing::tiny_model("mlp", 8);
  MeasureOptions o = two_copies();
  o.reps = 4;
  o.rounds = 3;  // ceil(4 / 3) = 2 passes per round
  const models::Profile p = measure_profile(m, o);
  REQUIRE(p.measurement.has_value());
  CHECK(p.measurement->reps == 4);
  o.reps = 0;
  CHECK_THROWS_AS(measure_profile(m, o), InputError);
}

TEST_CASE("ProfileInRounds: top_up adds timed passes to the latest round, not a round") {
  const models::Model m = testing::tiny_model("mlp", 8);
  ProfileInRounds rounds(m, two_copies());
  CHECK_THROWS_AS(rounds.top_up(2), InputError);  // no round to top up yet
  rounds.round(2);
  CHECK_THROWS_AS(rounds.top_up(0), InputError);
  rounds.top_up(3);
  CHECK(rounds.rounds_done() == 1);
  CHECK(rounds.timed_passes() == 5);
  std::vector<models::Profile> per_copy;
  const models::Profile p = rounds.profile(nullptr, &per_copy);
  REQUIRE(p.measurement.has_value());
  CHECK(p.measurement->reps == 5);
  CHECK(per_copy.size() == 2);
}

TEST_CASE("PredictionMeasurement: the first round is topped up to as many passes as each later round") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const planner::Plan plan = even_plan(m, 2, 4, 2, planner::ScheduleKind::one_f_one_b, false);
  PredictionMeasurement measurement(m, plan, 1, OptimizerOptions{});
  CHECK(measurement.pass_ns() == 0);
  measurement.round();
  REQUIRE(measurement.pass_ns() > 0);
  const int per_round = prediction_round_passes(1, measurement.pass_ns());
  // A tiny model's pass is far below kProfileSpanNs / kProfileMaxPasses: later rounds get
  // more than the first round's few passes, and the first is topped up to them.
  const int first = prediction_round_passes(0, 0);
  REQUIRE(per_round > first);
  // The copies run the plan's workers' passes (worker_passes): whole steps of 4 micro-batches.
  const int whole = (per_round + 3) / 4 * 4;
  CHECK(measurement.rounds_done() == 1);
  CHECK(measurement.timed_passes() == whole);
  measurement.round();
  CHECK(measurement.timed_passes() == 2 * whole);
  const Prediction p = measurement.predict();
  REQUIRE(p.profile.measurement.has_value());
  CHECK(p.profile.measurement->reps == kInContextRounds * whole);
}

TEST_CASE("worker_passes: each copy runs its worker's stages in its schedule's order") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const int n = static_cast<int>(m.layers().size());
  using K = PassOp::Kind;
  MeasureOptions mo = two_copies();
  // 2 stages, 1F1B, 4 micro-batches: worker 1 (the last stage) alternates F and BW; worker 0
  // runs two forwards first, then alternates.
  planner::Plan plan = even_plan(m, 2, 4, 2, planner::ScheduleKind::one_f_one_b, false);
  REQUIRE(worker_passes(plan, mo));
  CHECK(mo.trimmed_mean);
  REQUIRE(mo.copy_layers.size() == 2);
  REQUIRE(mo.copy_order.size() == 2);
  for (int i = 0; i < n; ++i) {
    const bool first = i < plan.stages[0].end_layer;
    CHECK(mo.copy_layers[0][i] == first);
    CHECK(mo.copy_layers[1][i] == !first);
  }
  const int b1 = plan.stages[1].first_layer;
  CHECK(mo.copy_order[1] == std::vector<PassOp>{{K::F, 0, b1, n},
                                                {K::BW, 0, b1, n},
                                                {K::F, 1, b1, n},
                                                {K::BW, 1, b1, n},
                                                {K::F, 2, b1, n},
                                                {K::BW, 2, b1, n},
                                                {K::F, 3, b1, n},
                                                {K::BW, 3, b1, n}});
  REQUIRE(mo.copy_order[0].size() == 8);
  CHECK(mo.copy_order[0][0] == PassOp{K::F, 0, 0, b1});
  CHECK(mo.copy_order[0][1] == PassOp{K::F, 1, 0, b1});
  CHECK(mo.copy_order[0][2] == PassOp{K::BW, 0, 0, b1});

  // GPipe: all forwards, then all backwards.
  plan = even_plan(m, 2, 4, 2, planner::ScheduleKind::gpipe, false);
  REQUIRE(worker_passes(plan, mo));
  for (int j = 0; j < 4; ++j) {
    CHECK(mo.copy_order[0][j] == PassOp{K::F, j, 0, b1});
    CHECK(mo.copy_order[0][4 + j].kind == K::BW);
  }
  // Zero bubble: split backwards become B and W ops.
  plan = even_plan(m, 2, 4, 2, planner::ScheduleKind::zb_h1, false);
  REQUIRE(worker_passes(plan, mo));
  for (const auto& order : mo.copy_order) {
    CHECK(std::count_if(order.begin(), order.end(), [](const PassOp& op) { return op.kind == K::B; }) == 4);
    CHECK(std::count_if(order.begin(), order.end(), [](const PassOp& op) { return op.kind == K::W; }) == 4);
    CHECK(std::count_if(order.begin(), order.end(), [](const PassOp& op) { return op.kind == K::BW; }) == 0);
  }

  // One worker: whole-model passes and medians, as before.
  plan = even_plan(m, 1, 4, 2, planner::ScheduleKind::one_f_one_b, false);
  mo.co_run_workers = 1;
  CHECK_FALSE(worker_passes(plan, mo));
  CHECK(mo.copy_layers.empty());
  CHECK(mo.copy_order.empty());
  CHECK_FALSE(mo.trimmed_mean);
}

TEST_CASE("ProfileInRounds with worker passes: each copy prices its own stage, the pool every layer") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const planner::Plan plan = even_plan(m, 2, 2, 2, planner::ScheduleKind::one_f_one_b, false);
  MeasureOptions mo = two_copies();
  REQUIRE(worker_passes(plan, mo));
  ProfileInRounds rounds(m, mo);
  rounds.round(3);  // whole steps of 2 micro-batches: 4 timed passes
  CHECK(rounds.timed_passes() == 4);
  std::vector<models::Profile> per_copy;
  const models::Profile p = rounds.profile(nullptr, &per_copy);
  REQUIRE(per_copy.size() == 2);
  const int cut = plan.stages[1].first_layer;
  for (int i = 0; i < static_cast<int>(m.layers().size()); ++i) {
    if (m.layers()[i].kind == models::LayerKind::input) continue;
    CAPTURE(i);
    CHECK(p.layers[i].forward_ns > 0);  // every layer from the copy that runs it
    CHECK((per_copy[0].layers[i].forward_ns > 0) == (i < cut));
    CHECK((per_copy[1].layers[i].forward_ns > 0) == (i >= cut));
  }
  // Per-copy layouts need one entry per copy and one point.
  mo.copy_layers.pop_back();
  CHECK_THROWS_AS(ProfileInRounds(m, mo), InputError);
}

TEST_CASE("prediction_round_passes: a few passes first, then enough to span kProfileSpanNs") {
  const int first = (kInContextTimedPasses + kInContextRounds - 1) / kInContextRounds;
  CHECK(prediction_round_passes(0, 1'000'000) == first);
  CHECK(prediction_round_passes(1, 0) == first);  // no pass time known
  // 1 ms passes: kProfileSpanNs / 1 ms = 500, capped at kProfileMaxPasses, over the rounds.
  CHECK(prediction_round_passes(1, 1'000'000) == (kProfileMaxPasses + kInContextRounds - 1) / kInContextRounds);
  // 10 ms passes: 50 passes in all.
  CHECK(prediction_round_passes(2, 10'000'000) == (50 + kInContextRounds - 1) / kInContextRounds);
  // Passes longer than the span: never fewer than the first round's.
  CHECK(prediction_round_passes(1, 2 * kProfileSpanNs) == first);
}

TEST_CASE("is_compare_round_step: before the last warm-up step and halfway through the timed steps") {
  const auto rounds_at = [](int warmup, int steps) {
    std::vector<int> at;
    for (int done = 1; done < warmup + steps; ++done)  // run_pipeline's calls
      if (is_compare_round_step(done, warmup, steps)) at.push_back(done);
    return at;
  };
  CHECK(rounds_at(5, 10) == std::vector<int>{4, 10});
  CHECK(rounds_at(10, 10) == std::vector<int>{9, 15});  // the demo
  CHECK(rounds_at(10, 5) == std::vector<int>{9, 13});
  CHECK(rounds_at(1, 4) == std::vector<int>{1, 3});  // one warm-up step: before the first timed one
  CHECK(rounds_at(5, 3) == std::vector<int>{4});     // too few timed steps for a round among them
  CHECK(rounds_at(0, 5) == std::vector<int>{3});     // no warm-up: halfway only
  CHECK(rounds_at(0, 0).empty());
}

TEST_CASE("run_pipeline: between_steps runs on the driver after every step but the last, training unchanged") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const planner::Plan plan = even_plan(m, 2, 4, 2, planner::ScheduleKind::one_f_one_b, false);
  const PipelineRunResult plain = run_pipeline(m, plan, short_run());

  // The hook measures a round of the prediction's profile, as `run --compare` does.
  PredictionMeasurement measurement(m, plan, 1, OptimizerOptions{});
  std::vector<int> calls;
  bool on_driver = true;
  const std::thread::id driver = std::this_thread::get_id();
  PipelineRunOptions o = short_run();
  std::vector<std::thread::id> copy_threads;
  std::mutex mu;
  o.between_steps = [&](int done, const CopyThreads& workers) {
    calls.push_back(done);
    on_driver = on_driver && std::this_thread::get_id() == driver;
    CHECK(workers.workers == 2);
    if (!is_compare_round_step(done, o.warmup_steps, o.steps)) return;
    measurement.round(&workers);
    workers.run([&](int) {
      std::lock_guard<std::mutex> lock(mu);
      copy_threads.push_back(std::this_thread::get_id());
    });
  };
  const PipelineRunResult r = run_pipeline(m, plan, o);
  CHECK(calls == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(on_driver);
  // `workers` ran on the two worker threads, neither of them the driver.
  CHECK(copy_threads.size() == 4);
  const std::set<std::thread::id> distinct(copy_threads.begin(), copy_threads.end());
  CHECK(distinct.size() == 2);
  CHECK(distinct.count(driver) == 0);
  CHECK(measurement.rounds_done() == 2);  // after steps 1 (before the last warm-up step) and 4 (halfway)
  CHECK(r.losses == plain.losses);        // the profile's copies are not the run's weights
  const Prediction p = measurement.predict();
  CHECK(measurement.rounds_done() == kInContextRounds);
  CHECK(p.iteration_ms > 0);
  CHECK(p.peak_memory_bytes.size() == 2);

  // The tools' hook: a round after exactly the steps is_compare_round_step names.
  PredictionMeasurement again(m, plan, 1, OptimizerOptions{});
  int made = 0;
  o.between_steps = compare_rounds_between_steps(o.warmup_steps, o.steps, [&]() -> PredictionMeasurement& {
    ++made;
    return again;
  });
  run_pipeline(m, plan, o);
  CHECK(made == 2);
  CHECK(again.rounds_done() == 2);

  // A stop ends the run at a step boundary before the hook runs there.
  calls.clear();
  int polls = 0;
  o.between_steps = [&](int done, const CopyThreads&) { calls.push_back(done); };
  o.stop_requested = [&] { return ++polls == 3; };
  const PipelineRunResult stopped = run_pipeline(m, plan, o);
  CHECK(stopped.stopped);
  CHECK(calls == std::vector<int>{1, 2});
}

TEST_CASE("run_on_workers: an exception on one worker reaches the caller, and the run goes on") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const planner::Plan plan = even_plan(m, 2, 4, 2, planner::ScheduleKind::gpipe, false);
  const PipelineRunResult plain = run_pipeline(m, plan, short_run());
  PipelineRunOptions o = short_run();
  int caught = 0;
  o.between_steps = [&](int, const CopyThreads& workers) {
    try {
      workers.run([](int device) {
        if (device == 1) throw InputError("copy on device 1 failed");
      });
    } catch (const InputError& e) {
      CHECK(std::string(e.what()) == "copy on device 1 failed");
      ++caught;
    }
  };
  const PipelineRunResult r = run_pipeline(m, plan, o);
  CHECK(caught == 5);
  CHECK(r.losses == plain.losses);
  // Uncaught, it ends the run with that error.
  o.between_steps = [](int, const CopyThreads& workers) {
    workers.run([](int device) {
      if (device == 0) throw InputError("copy on device 0 failed");
    });
  };
  CHECK_THROWS_WITH_AS(run_pipeline(m, plan, o), "copy on device 0 failed", InputError);
}

TEST_CASE("EndToEndClock: a pause between timed steps is left out of wall_s, one outside them is not") {
  BatchSlicer slicer(std::make_unique<CountingSource>(), 4, 0);
  const auto wall_s = [&](int pause_after) {  // steps 0-1 warm-up, 2-4 timed; pause after that step
    EndToEndClock clock(slicer, 2);
    for (int step = 0; step < 5; ++step) {
      clock.step_begins(step);
      clock.step_ends(step);
      if (step == pause_after) clock.paused(kPretendPauseNs);
    }
    PipelineRunResult r;
    clock.fill(r, 4);
    return r.wall_s;
  };
  CHECK(wall_s(-1) >= 0);
  CHECK(wall_s(1) >= 0);    // before the first timed step: not in the wall clock anyway
  CHECK(wall_s(4) >= 0);    // after the last one: likewise
  CHECK(wall_s(2) < -900);  // between timed steps 2 and 3: subtracted
}
