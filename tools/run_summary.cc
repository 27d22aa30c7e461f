#include "tools/run_summary.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "sim/plan_costs.h"
#include "tools/model_report.h"

namespace pw::tools {

namespace {

// What `run --compare --device cuda` adds (exec/runtime/device_compare.h).
void print_gpu_comparison(const exec::GpuComparison& g, double measured_ms) {
  std::printf("profile measured on %s\n", g.profile_device.c_str());
  if (!g.note.empty()) {
    std::printf("%s\n", g.note.c_str());
    std::printf("predicted with the card shared (no shorter than its total work) %.2f ms, measured %.2f ms (%+.1f%%)\n",
                g.shared_iteration_ms, measured_ms, 100.0 * (measured_ms / g.shared_iteration_ms - 1.0));
  }
  for (size_t c = 0; c < g.cards.size(); ++c) {
    std::printf(
        "%s device memory: peak %s", g.cards[c].gpu.to_string().c_str(),
        c < g.measured_peak_bytes.size() ? tools::human_bytes(double(g.measured_peak_bytes[c])).c_str() : "n/a");
    std::printf(" (allocator), predicted %s\n", tools::human_bytes(double(g.predicted_peak_bytes.at(c))).c_str());
  }
}

}  // namespace

void print_run_json(const exec::RunReport& report) { std::cout << Json(report).dump(2) << "\n"; }

void print_run_text(const exec::RunReport& s) {
  const planner::Plan& plan = s.plan;
  const exec::PipelineRunResult& r = s.result;
  const exec::Prediction* cmp = s.prediction;
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
  if (cmp && cmp->gpu) print_gpu_comparison(*cmp->gpu, r.median_iteration_ms);
  for (int d = 0; d < devices; ++d) {
    std::printf("worker %d (%s): peak memory %s", d, r.placement[d].c_str(),
                tools::human_bytes(double(r.peak_memory_bytes[d])).c_str());
    if (cmp) std::printf(", predicted %s", tools::human_bytes(double(cmp->peak_memory_bytes.at(d))).c_str());
    std::printf("\n");
  }
}

}  // namespace pw::tools
