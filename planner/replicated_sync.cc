#include "planner/replicated_sync.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/error.h"
#include "planner/plan_figures.h"

namespace pw::planner {

RingCost ring_allreduce(const models::Cluster& cluster, const std::vector<int>& devices, int64_t bytes) {
  const int r = static_cast<int>(devices.size());
  for (int d : devices)
    if (d < 0 || d >= cluster.num_devices())
      throw InputError("cluster \"" + cluster.name() + "\": device " + std::to_string(d) + " out of range (" +
                       std::to_string(cluster.num_devices()) + " devices)");
  if (r < 2) return {};
  int level = -1;
  for (int a = 0; a < r; ++a)
    for (int b = a + 1; b < r; ++b) level = std::max(level, cluster.level_between(devices[a], devices[b]));
  if (level < 0) return {};
  const models::Level& l = cluster.levels()[level];
  RingCost c;
  c.occupancy_ns = models::link_bytes_ns(l, 2.0 * (r - 1) / r * static_cast<double>(bytes));
  c.latency_ns = 2 * static_cast<int64_t>(r - 1) * l.latency_ns;
  return c;
}

void predict_replicated_sync(Plan& plan, const models::Profile& profile, const models::Cluster& cluster) {
  if (!is_synchronous(plan.schedule))
    throw InputError("predict_replicated_sync: plan schedule " + std::string(to_string(plan.schedule)) +
                     " is asynchronous");
  const int S = plan.num_stages();
  const int L = static_cast<int>(profile.layers.size());
  std::vector<double> x(S, 0.0);  // x[c]: cut after stage c, per micro-batch and direction (s)
  double sum = 0, period = 0, allreduce = 0;
  for (int s = 0; s < S; ++s) {
    StagePlan& st = plan.stages[s];
    if (st.first_layer < 0 || st.end_layer > L || st.first_layer >= st.end_layer)
      throw InputError("plan stage " + std::to_string(s) + ": layers [" + std::to_string(st.first_layer) + "," +
                       std::to_string(st.end_layer) + ") not in the profile of \"" + profile.model + "\"");
    int64_t params = 0;
    for (int k = st.first_layer; k < st.end_layer; ++k) {
      const int li = plan.layer_order.empty() ? k : plan.layer_order.at(k);
      params += profile.layers.at(li).parameter_bytes;
    }
    st.predicted.allreduce_ns = ring_allreduce(cluster, st.devices, params).total();
    allreduce = std::max(allreduce, st.predicted.allreduce_ns * 1e-9);
    const double t = (st.predicted.forward_ns + st.predicted.backward_ns) * 1e-9;
    const int r = std::max(1, st.replicas());
    sum += t;
    period = std::max(period, t / r);
    if (s + 1 < S) {
      x[s] = st.predicted.comm_ns * 1e-9 - (s > 0 ? x[s - 1] : 0.0);
      x[s] = std::max(0.0, x[s]);
      const int next = std::max(1, plan.stages[s + 1].replicas());
      sum += 2 * x[s];
      period = std::max(period, x[s] / std::lcm(r, next));
    }
  }
  PlanPrediction& q = plan.predicted;
  const double step = plan.predicted_step_ns * 1e-9;
  q.bottleneck_time_s = period;
  q.iteration_time_s = sum + (plan.num_micro_batches - 1) * period + allreduce + step;
  q.throughput_samples_per_s = q.iteration_time_s > 0 ? plan.batch / q.iteration_time_s : 0;
  const StagePlan& first = plan.stages[0];
  const double busy0 = (first.predicted.forward_ns + first.predicted.backward_ns) * 1e-9 * plan.num_micro_batches /
                       std::max(1, first.replicas());
  q.bubble_rate = q.iteration_time_s > 0 ? std::max(0.0, (q.iteration_time_s - busy0) / q.iteration_time_s) : 0;
  int used = 0;
  for (const StagePlan& st : plan.stages) used += st.replicas();
  plan.num_devices_used = used;
  set_plan_figures(plan);
}

}  // namespace pw::planner
