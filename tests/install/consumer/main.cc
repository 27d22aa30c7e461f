// Plans and simulates a zoo GPT with the installed Pipewright libraries; with the executor it
// also allocates a tensor through pipewright::exec (its oneDNN/OpenMP/hwloc must link).
#include <cstdio>

#include "models/cluster.h"
#include "models/cost.h"
#include "models/device.h"
#include "models/zoo.h"
#include "planner/planner.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"
#ifdef CONSUMER_WITH_EXEC
#include "exec/tensor.h"
#endif

int main() {
  pw::models::ZooOptions zo;
  zo.layers = 8;
  zo.d_model = 256;
  zo.heads = 4;
  zo.seq = 128;
  zo.vocab = 1000;
  zo.batch = 16;
  const pw::models::Model model = pw::models::build_zoo_model("gpt", zo);
  const pw::models::DeviceSpec& dev = pw::models::find_device("a100-80g");
  const pw::models::Profile profile = pw::models::analytic_profile(model, dev, 1, {});
  const pw::models::Cluster cluster = pw::models::make_flat_cluster(dev, 4, 1e11);
  pw::planner::PlanRequest req;
  req.batch = 16;
  req.partitioner = pw::planner::Partitioner::even;
  req.micro_batches = 8;
  const pw::planner::PlanOutcome out = pw::planner::make_plan(profile, cluster, req);
  if (!out.feasible) {
    std::printf("infeasible: %s\n", out.reason.c_str());
    return 1;
  }
  const pw::sim::StageCosts costs = pw::sim::stage_costs_from_plan(out.plan, profile, &cluster);
  const auto schedule = pw::sim::schedule_for_plan(out.plan, costs);
  const auto result = pw::sim::simulate(schedule, costs, pw::sim::network_for_plan(out.plan, &cluster));
  std::printf("gpt: %d stages, %d micro-batches; simulated iteration %.3f ms\n", out.plan.num_stages(),
              out.plan.num_micro_batches, result.report.makespan_ns / 1e6);
#ifdef CONSUMER_WITH_EXEC
  const pw::exec::Tensor t = pw::exec::Tensor::zeros({2, 3});
  std::printf("exec tensor of %lld elements\n", static_cast<long long>(t.numel()));
#endif
  std::printf("planned and simulated with the installed pipewright\n");
  return 0;
}
