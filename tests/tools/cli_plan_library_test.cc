// `pipewright plan` is the library call and nothing more: for every schedule and objective, the
// plan it writes (stages, devices, micro-batches, every prediction) equals what
// sim::plan_with_prediction returns for the same profile, cluster and request, rebuilt here from
// what the plan file records about itself (its embedded profile and cluster, its options).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "models/cluster.h"
#include "models/json_util.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "sim/plan_prediction.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

struct Case {
  std::vector<std::string> args;  // after `plan --model gpt --device a100-80g`
  const char* schedule;           // the schedule the written plan must have
};

Json without_inputs(const pw::planner::Plan& p) {
  Json j = p;
  j.erase("inputs");
  return j;
}

}  // namespace

TEST_CASE("plan: the CLI's plan is sim::plan_with_prediction's, for every schedule and objective") {
  const std::vector<Case> cases = {
      {{"--schedule", "auto"}, "1f1b"},
      {{"--schedule", "gpipe"}, "gpipe"},
      {{"--schedule", "1f1b", "--recompute", "on"}, "1f1b"},
      {{"--schedule", "zb-h1"}, "zb-h1"},
      {{"--schedule", "zb-h2"}, "zb-h2"},
      {{"--schedule", "interleaved-1f1b"}, "interleaved-1f1b"},
      {{"--schedule", "interleaved-1f1b", "--chunks", "3"}, "interleaved-1f1b"},
      {{"--objective", "async"}, "pipedream-async"},
      {{"--objective", "pipedream"}, "pipedream-async"},
      {{"--partitioner", "even", "--micro-batches", "8"}, "1f1b"},
  };
  ScratchDir dir;
  int compared = 0;
  for (const Case& c : cases) {
    std::vector<std::string> args = {"plan",     "--model", "gpt",     "--device", "a100-80g", "--devices",       "4",
                                     "--layers", "8",       "--batch", "32",       "-o",       dir.file("p.json")};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CAPTURE(args);
    const CliResult r = run_cli(args);
    REQUIRE(r.rc == 0);
    const pw::planner::Plan cli = pw::planner::load_plan_file(dir.file("p.json"));
    CHECK(std::string(pw::planner::to_string(cli.schedule)) == c.schedule);
    REQUIRE_FALSE(cli.inputs.profile.is_null());
    REQUIRE_FALSE(cli.inputs.cluster.is_null());
    const pw::models::Profile profile = pw::models::profile_from_json(cli.inputs.profile);
    const pw::models::Cluster cluster = pw::models::cluster_from_json(cli.inputs.cluster);
    const Json& o = cli.inputs.options;
    pw::planner::PlanRequest req;
    req.batch = o.at("batch").get<int64_t>();
    req.micro_batches =
        pw::planner::parse_micro_batches_request(o.at("micro_batches").get<std::string>(), "micro_batches");
    req.schedule = pw::planner::parse_schedule_request(o.at("schedule").get<std::string>(), "schedule");
    req.objective = pw::planner::parse_objective(o.at("objective").get<std::string>(), "objective");
    req.recompute = pw::planner::parse_recompute_choice(o.at("recompute").get<std::string>(), "recompute");
    req.partitioner = pw::planner::parse_partitioner(o.at("partitioner").get<std::string>(), "partitioner");
    req.optimizer = o.at("optimizer").get<std::string>();
    req.memory_limit_bytes = o.at("memory_limit_bytes").get<int64_t>();
    if (o.contains("chunks")) req.chunks = o.at("chunks").get<int>();
    pw::planner::PlanOutcome lib = pw::sim::plan_with_prediction(profile, cluster, req);
    REQUIRE(lib.feasible);
    pw::planner::set_plan_inputs(lib.plan, cli.inputs.profile, cli.inputs.cluster, /*embed=*/true);  // the hashes
    CHECK(without_inputs(lib.plan) == without_inputs(cli));
    CHECK(lib.plan.predicted.iteration_time_s > 0);
    ++compared;
  }
  CHECK(compared == static_cast<int>(cases.size()));
}
