// Figures that rank plans (sim/report.h): schedule bubble, stage imbalance and idle share,
// hand-checked on unequal stages and on the 48x2048 GPT.
#include <doctest/doctest.h>

#include <string>

#include "models/cost.h"
#include "models/device.h"
#include "models/zoo.h"
#include "planner/planner.h"
#include "planner/schedule_gen.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"
#include "sim/trace_io.h"

using namespace pw;
using planner::ScheduleKind;

TEST_CASE("figures: hand-checkable unequal stages (schedule bubble, imbalance, idle share apart)") {
  // 1f1b, p = 2, m = 4, free transfers; stage 0 F = 10, BW = 20; stage 1 F = 5, BW = 5.
  // By hand the iteration is 120 ns, stage 0 busy 120, stage 1 busy 40: idle share
  // 1 - 80/120 = 1/3, imbalance 1 - 80/120 = 1/3; the compatibility bubble_rate (of the
  // longest-span device, device 0) is 0. Equalised: F = llround(7.5) = 8, BW = llround(12.5)
  // = 13, so the schedule bubble is (p-1)/(m+p-1) = 1/5.
  const planner::Schedule s = planner::make_schedule(ScheduleKind::one_f_one_b, 2, 4);
  sim::StageCosts c = sim::StageCosts::uniform(2, 0, 0, 0);
  c.forward_ns = {10, 5};
  c.backward_input_ns = {20, 5};
  sim::SimOptions o;
  o.schedule_bubble = true;
  const sim::Report r = sim::simulate(s, c, sim::Network{}, o).report;
  CHECK(r.makespan_ns == 120);
  CHECK(r.bubble_rate == 0);
  CHECK(r.idle_share == doctest::Approx(1.0 / 3).epsilon(1e-12));
  CHECK(r.stage_imbalance == doctest::Approx(1.0 / 3).epsilon(1e-12));
  CHECK(r.has_schedule_bubble);
  CHECK(r.schedule_bubble == doctest::Approx(1.0 / 5).epsilon(1e-12));
  Json j;
  to_json(j, r);
  CHECK(j["schedule_bubble"].get<double>() == r.schedule_bubble);
  CHECK(j["stage_imbalance"].get<double>() == r.stage_imbalance);
  CHECK(sim::format_report(r).find("schedule bubble 20.00%  stage imbalance 33.33%  idle share 33.33%") !=
        std::string::npos);
  // Without the option the schedule bubble is not known and not written.
  const sim::Report plain = sim::simulate(s, c, sim::Network{}).report;
  CHECK_FALSE(plain.has_schedule_bubble);
  to_json(j, plain);
  CHECK_FALSE(j.contains("schedule_bubble"));
  CHECK(sim::format_report(plain).find("schedule bubble n/a") != std::string::npos);
}

TEST_CASE("figures: the 48x2048 GPT on 8 A100s, batch 256, even partition, simulated") {
  // As `plan --model gpt --layers 48 --d-model 2048 --heads 16 --device a100-80g --devices 8
  // --batch 256 --partitioner even`, then `simulate --plan` with the profile and the cluster.
  models::ZooOptions zo;
  zo.layers = 48;
  zo.d_model = 2048;
  zo.heads = 16;
  zo.batch = 256;
  const auto& dev = models::find_device("a100-80g");
  const models::Profile profile = models::analytic_profile(models::build_zoo_model("gpt", zo), dev, 1, {});
  const models::Cluster cluster = models::make_flat_cluster(dev, 8, 1.25e9);
  planner::PlanRequest req;
  req.batch = 256;
  req.partitioner = pw::planner::Partitioner::even;
  const planner::PlanOutcome out = planner::make_plan(profile, cluster, req);
  REQUIRE(out.feasible);
  const planner::Plan& plan = out.plan;
  REQUIRE(plan.num_stages() == 8);
  REQUIRE(plan.num_micro_batches == 256);
  const sim::StageCosts costs = sim::stage_costs_from_plan(plan, profile, &cluster);
  sim::SimOptions o;
  o.schedule_bubble = true;
  o.record_trace = true;
  const sim::SimResult res =
      sim::simulate(sim::schedule_for_plan(plan, costs), costs, sim::network_for_plan(plan, &cluster), o);
  const sim::Report& r = res.report;
  const double closed = 7.0 / 263;  // (p-1)/(m+p-1)
  MESSAGE("simulated: schedule bubble ", r.schedule_bubble, ", imbalance ", r.stage_imbalance, ", idle ", r.idle_share,
          ", bubble_rate ", r.bubble_rate, "; planned: ", plan.predicted.schedule_bubble, ", ",
          plan.predicted.stage_imbalance, ", ", plan.predicted.idle_share, ", ", plan.predicted.bubble_rate);
  CHECK(std::abs(r.schedule_bubble - closed) < 0.01);
  CHECK(std::abs(plan.predicted.schedule_bubble - closed) < 0.01);
  // The even split of the profile's 53 layers is unequal: imbalance is reported apart, and
  // the compatibility bubble_rate mixes it in.
  CHECK(r.stage_imbalance > 0.05);
  CHECK(r.stage_imbalance == doctest::Approx(plan.predicted.stage_imbalance).epsilon(0.05));
  CHECK(r.idle_share > r.schedule_bubble);
  CHECK(r.idle_share < r.schedule_bubble + r.stage_imbalance + 0.05);
  CHECK(r.bubble_rate > 10 * closed);
  const std::string svg = sim::timeline_svg(res.trace, r, "gpt");
  CHECK(svg.find("schedule bubble 2.") != std::string::npos);
  CHECK(svg.find("stage imbalance") != std::string::npos);
  CHECK(svg.find("idle share") != std::string::npos);
}
