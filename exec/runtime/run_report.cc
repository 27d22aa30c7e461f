#include "exec/runtime/run_report.h"

#include <algorithm>
#include <vector>

#include "sim/plan_costs.h"

namespace pw::exec {

namespace {

// On GPUs only: a host run's document is unchanged.
void add_gpu_comparison(Json& j, const GpuComparison& g) {
  Json cards = Json::array();
  for (size_t c = 0; c < g.cards.size(); ++c) {
    Json card{{"gpu", g.cards[c].gpu.to_string()},
              {"workers", g.cards[c].workers},
              {"predicted_peak_bytes", g.predicted_peak_bytes.at(c)}};
    if (c < g.measured_peak_bytes.size()) card["peak_bytes"] = g.measured_peak_bytes[c];
    cards.push_back(card);
  }
  j["device_memory"] = cards;
  j["profile_device"] = g.profile_device;
  if (!g.note.empty()) {
    j["predicted_shared_iteration_ms"] = g.shared_iteration_ms;
    j["compare_note"] = g.note;
  }
}

}  // namespace

void to_json(Json& j, const RunReport& s) {
  const planner::Plan& plan = s.plan;
  const PipelineRunResult& r = s.result;
  const Prediction* cmp = s.prediction;
  Json stages = Json::array();
  for (int d = 0; d < s.devices; ++d) {
    Json st{{"device", d}, {"cores", r.placement[d]}, {"peak_memory_bytes", r.peak_memory_bytes[d]}};
    if (cmp) st["predicted_peak_memory_bytes"] = cmp->peak_memory_bytes.at(d);
    stages.push_back(st);
  }
  j = Json{{"format", "pipewright.run-result/1"},
           {"model", s.model},
           {"schedule", sim::run_info_for_plan(plan, std::max(1, r.iterations_run)).schedule},
           {"stages", plan.num_stages()},
           {"workers", s.devices},
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
  if (!r.lanes.empty()) j["device_lanes"] = r.lanes;  // on GPUs only: a CPU run's document is unchanged
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
  if (cmp && cmp->gpu) add_gpu_comparison(j, *cmp->gpu);
  if (!r.warning.empty()) j["warning"] = r.warning;
  j["transport_spin_us"] = static_cast<double>(r.transport_spin_ns) / 1e3;  // exec/machine/machine_load.h
}

}  // namespace pw::exec
