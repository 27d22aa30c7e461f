#include "tools/run_summary.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

#include "models/json_util.h"
#include "sim/plan_costs.h"
#include "tools/model_report.h"

namespace pw::tools {

void print_run_json(const RunSummary& s, const exec::PipelineRunResult& r, const exec::Prediction* cmp) {
  const planner::Plan& plan = s.plan;
  const int devices = s.devices;
  Json stages = Json::array();
  for (int d = 0; d < devices; ++d) {
    Json st{{"device", d}, {"cores", r.placement[d]}, {"peak_memory_bytes", r.peak_memory_bytes[d]}};
    if (cmp) st["predicted_peak_memory_bytes"] = cmp->peak_memory_bytes.at(d);
    stages.push_back(st);
  }
  Json j{{"format", "pipewright.run-result/1"},
           {"model", s.model},
           {"schedule", sim::run_info_for_plan(plan, std::max(1, r.iterations_run)).schedule},
           {"stages", plan.num_stages()},
           {"workers", devices},
           {"micro_batches", plan.num_micro_batches},
           {"micro_batch_size", plan.micro_batch_size},
           {"batch", plan.batch},
           {"steps", s.steps},
           {"warmup_steps", s.warmup_steps},
           {"losses", r.losses},
           {"samples_per_s", r.samples_per_s},
           {"iteration_ms", r.median_iteration_ms},
           {"peak_memory_bytes", r.peak_memory_bytes},
           {"per_stage", stages}};
  std::vector<double> its;
  for (int64_t ns : r.iteration_ns) its.push_back(static_cast<double>(ns) / 1e6);
  j["iteration_ms_per_step"] = its;
  j["wall_s"] = r.wall_s;
  j["end_to_end_samples_per_s"] = r.end_to_end_samples_per_s;
  j["data_wait_s"] = r.data_wait_s;
  j["data_bound"] = r.data_bound;
  j["prefetch"] = s.prefetch;
  j["first_step"] = r.first_step;
  j["completed_steps"] = r.first_step + r.iterations_run;
  j["stopped"] = r.stopped;
  if (r.checkpoint_step >= 0) j["checkpoint"] = {{"dir", s.checkpoint_dir}, {"step", r.checkpoint_step}};
  if (cmp) {
    j["predicted_iteration_ms"] = cmp->iteration_ms;
    j["predicted_peak_memory_bytes"] = cmp->peak_memory_bytes;
  }
  if (!r.warning.empty()) j["warning"] = r.warning;
  j["transport_spin_us"] = static_cast<double>(r.transport_spin_ns) / 1e3;  // exec/machine_load.h
  std::cout << j.dump(2) << "\n";
}

void print_run_text(const RunSummary& s, const exec::PipelineRunResult& r, const exec::Prediction* cmp) {
  const planner::Plan& plan = s.plan;
  const int devices = s.devices;
  std::printf("model %s, %s, %d workers, %lld steps of batch %lld\n", s.model.c_str(),
              sim::run_info_for_plan(plan, std::max(1, r.iterations_run)).schedule.c_str(), devices,
              static_cast<long long>(s.steps), static_cast<long long>(plan.batch));
  if (!r.losses.empty()) std::printf("loss %.4f -> %.4f\n", r.losses.front(), r.losses.back());
  std::printf("iteration %.2f ms (median), %.1f samples/s\n", r.median_iteration_ms, r.samples_per_s);
  std::printf("end to end %.1f samples/s (%zu steps in %.2f s, data included; waited %.2f s for data)\n",
              r.end_to_end_samples_per_s, r.iteration_ns.size(), r.wall_s, r.data_wait_s);
  if (cmp)
    std::printf("predicted iteration %.2f ms, measured %.2f ms (%+.1f%%)\n", cmp->iteration_ms, r.median_iteration_ms,
                100.0 * (r.median_iteration_ms / cmp->iteration_ms - 1.0));
  for (int d = 0; d < devices; ++d) {
    std::printf("worker %d (%s): peak memory %s", d, r.placement[d].c_str(),
                tools::human_bytes(double(r.peak_memory_bytes[d])).c_str());
    if (cmp) std::printf(", predicted %s", tools::human_bytes(double(cmp->peak_memory_bytes.at(d))).c_str());
    std::printf("\n");
  }
}

}  // namespace pw::tools
