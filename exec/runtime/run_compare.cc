#include "exec/runtime/run_compare.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "exec/network.h"
#include "exec/profiler.h"
#include "planner/schedule.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"

namespace pw::exec {

std::vector<int64_t> measure_step_ns(const models::Model& model, const planner::Plan& plan,
                                     const OptimizerOptions& optimizer) {
  Network net(model, 1);
  const int devices = plan.num_stages() / plan.chunks;
  std::vector<int64_t> out(devices, 0);
  for (int d = 0; d < devices; ++d) {
    std::vector<std::unique_ptr<LayerRange>> ranges;
    std::vector<Tensor*> params, grads;
    for (int s = d; s < plan.num_stages(); s += devices) {
      ranges.push_back(std::make_unique<LayerRange>(net, plan.stages[s].first_layer, plan.stages[s].end_layer));
      for (auto* p : ranges.back()->parameters()) params.push_back(p);
      for (auto* g : ranges.back()->gradients()) grads.push_back(g);
    }
    if (params.empty()) continue;
    Optimizer opt(params, grads, optimizer);
    std::vector<int64_t> t;
    for (int rep = 0; rep < 7; ++rep) {
      const auto a = std::chrono::steady_clock::now();
      opt.step();
      for (auto& r : ranges) r->zero_grad();
      t.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    out[d] = t[t.size() / 2];
  }
  return out;
}

Prediction predict_from_measurement(const models::Model& model, const planner::Plan& plan, int threads,
                                    const OptimizerOptions& optimizer) {
  MeasureOptions mo;
  mo.micro_batch = plan.micro_batch_size;
  mo.reps = 7;
  mo.warmup = 2;
  mo.threads = threads;
  mo.optimizer = optimizer.kind == OptimizerKind::adam ? "adam" : (optimizer.momentum > 0 ? "sgd-momentum" : "sgd");
  Prediction p;
  p.profile = measure_profile(model, mo);
  sim::StageCosts costs = sim::stage_costs_from_plan(plan, p.profile);
  if (planner::is_synchronous(plan.schedule)) costs.step_ns = measure_step_ns(model, plan, optimizer);
  const planner::Schedule sched = sim::schedule_for_plan(plan, costs);
  sim::SimOptions so;
  so.iterations = 1;
  const sim::SimResult sr = sim::simulate(sched, costs, sim::network_for_plan(plan, nullptr), so);
  p.report = sr.report;
  p.iteration_ms = static_cast<double>(sr.report.iteration_ns) / 1e6;
  sim::StageCosts held = costs;
  held.working_bytes.assign(held.working_bytes.size(), 0);
  const sim::SimResult sh = sim::simulate(sched, held, sim::network_for_plan(plan, nullptr), so);
  for (const auto& d : sh.report.devices) p.peak_memory_bytes.push_back(d.peak_memory_bytes);
  p.working_bytes.assign(p.peak_memory_bytes.size(), 0);
  for (int s = 0; s < sched.num_stages; ++s) {
    int64_t& w = p.working_bytes.at(sched.stage_device.at(s));
    w = std::max(w, costs.working_bytes.at(s));
  }
  return p;
}

}  // namespace pw::exec
