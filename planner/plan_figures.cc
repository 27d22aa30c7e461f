#include "planner/plan_figures.h"

#include <algorithm>

namespace pw::planner {

void set_plan_figures(Plan& plan) {
  PlanPrediction& q = plan.predicted;
  q.schedule_bubble = q.stage_imbalance = q.idle_share = 0;
  if (plan.stages.empty()) return;
  const bool sync = is_synchronous(plan.schedule);
  const double m = plan.num_micro_batches;
  double sum = 0, mx = 0;
  int devices = 0;
  for (const StagePlan& st : plan.stages) {
    const int r = std::max(1, st.replicas());
    const StagePrediction& p = st.predicted;
    const double t = static_cast<double>(p.forward_ns + p.backward_ns);
    double busy = m * t / r;
    if (r > 1) busy += sync ? static_cast<double>(p.allreduce_ns) : m / r * static_cast<double>(p.allreduce_ns);
    busy *= 1e-9;
    sum += r * busy;
    mx = std::max(mx, busy);
    devices += r;
  }
  const double mean = sum / devices;
  if (mx > 0) q.stage_imbalance = 1.0 - mean / mx;
  if (q.iteration_time_s > 0) q.idle_share = std::clamp(1.0 - mean / q.iteration_time_s, 0.0, 1.0);
  if (sync) q.schedule_bubble = (devices - 1.0) / (m + devices - 1.0);
}

}  // namespace pw::planner
