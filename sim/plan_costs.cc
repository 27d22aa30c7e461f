#include "sim/plan_costs.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "models/error.h"
#include "models/limits.h"
#include "models/profile_points.h"
#include "planner/replicated_sync.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_replicas.h"

namespace pw::sim {

namespace {

int pipeline_devices(const planner::Plan& plan) {
  const int S = plan.num_stages();
  if (plan.chunks < 1 || S % plan.chunks != 0)
    throw InputError("plan: " + std::to_string(S) +
                     " stages are not a multiple of chunks = " + std::to_string(plan.chunks));
  return S / plan.chunks;
}

int64_t allreduce_ns(const planner::StagePlan& st, int64_t bytes, const models::Cluster* cluster) {
  if (st.replicas() <= 1 || cluster == nullptr) return 0;
  for (int d : st.devices)
    if (d < 0 || d >= cluster->num_devices())
      throw InputError("plan: device " + std::to_string(d) + " not in cluster \"" + cluster->name() + "\"");
  return planner::ring_allreduce(*cluster, st.devices, bytes).total();
}

bool replicated(const planner::Plan& plan) {
  for (const auto& st : plan.stages)
    if (st.replicas() > 1) return true;
  return false;
}

std::vector<int> replica_counts(const planner::Plan& plan) {
  std::vector<int> r;
  for (const auto& st : plan.stages) r.push_back(st.replicas());
  return r;
}

}  // namespace

RunInfo run_info_for_plan(const planner::Plan& plan, int iterations) {
  RunInfo info;
  info.schedule = std::string(planner::to_string(plan.schedule));
  info.num_stages = plan.num_stages();
  info.num_micro_batches = plan.num_micro_batches;
  info.iterations = iterations;
  info.samples_per_micro_batch = plan.micro_batch_size;
  return info;
}

StageCosts stage_costs_from_plan(const planner::Plan& plan, const models::Profile& profile,
                                 const models::Cluster* cluster) {
  const int S = plan.num_stages();
  pipeline_devices(plan);
  const int L = static_cast<int>(profile.layers.size());
  if (plan.micro_batch_size < 1) throw InputError("plan: micro_batch_size must be >= 1");
  if (profile.micro_batch < 1) throw InputError("profile: micro_batch must be >= 1");
  for (int k = 0; k < S; ++k) {
    const planner::StagePlan& st = plan.stages[k];
    const std::string at = "plan stage " + std::to_string(k);
    if (st.first_layer < 0 || st.end_layer > L || st.first_layer >= st.end_layer)
      throw InputError(at + ": layers [" + std::to_string(st.first_layer) + "," + std::to_string(st.end_layer) +
                       ") not in the profile of \"" + profile.model + "\" (" + std::to_string(L) + " layers)");
    for (size_t i = 0; i < st.layer_names.size(); ++i) {
      const int li = st.first_layer + static_cast<int>(i);
      if (li >= st.end_layer || profile.layers[li].name != st.layer_names[i])
        throw InputError(at + ": layer \"" + st.layer_names[i] + "\" is not layer " + std::to_string(li) +
                         " of the profile of \"" + profile.model + "\"" +
                         (profile.index_of(st.layer_names[i]) < 0 ? " (the profile lacks it)" : ""));
    }
  }
  if (plan.stages.back().end_layer != L)
    throw InputError("plan: stages end at layer " + std::to_string(plan.stages.back().end_layer) +
                     " but the profile of \"" + profile.model + "\" has " + std::to_string(L) + " layers");
  // Measured points: the costs at the plan's micro-batch size and threads (interpolated).
  std::optional<models::ProfileAt> at;
  if (!profile.points.empty()) at = models::profile_at(profile, plan.micro_batch_size, plan.threads_per_stage);
  const models::Profile& pr = at ? at->profile : profile;
  const double scale = static_cast<double>(plan.micro_batch_size) / static_cast<double>(pr.micro_batch);
  // A stage's time or size at the plan's micro-batch size (linear in it), refused where it would
  // leave int64 (a micro_batch_size far above the profile's; the profile's sums are within limits).
  auto scaled = [&](int64_t v) {
    const double x = static_cast<double>(v) * scale;
    if (!(x < 9.0e18))
      throw InputError("plan: micro_batch_size " + std::to_string(plan.micro_batch_size) + " is " +
                       models::format_real(scale) + " times the profile's micro_batch (" +
                       std::to_string(pr.micro_batch) + "): a stage's time or size scaled by it passes 2^63");
    return static_cast<int64_t>(std::llround(x));
  };

  StageCosts c;
  c.samples_per_micro_batch = plan.micro_batch_size;
  c.forward_ns.assign(S, 0);
  c.backward_input_ns.assign(S, 0);
  c.backward_weight_ns.assign(S, 0);
  c.activation_bytes.assign(S, 0);
  c.gradient_bytes.assign(S, 0);
  c.allreduce_ns.assign(S, 0);
  c.weights_optimizer_bytes.assign(S, 0);
  c.parameter_bytes.assign(S, 0);
  c.stash_bytes_per_micro_batch.assign(S, 0);
  c.weight_pending_bytes_per_micro_batch.assign(S, 0);
  c.input_bytes_per_micro_batch.assign(S, 0);
  c.working_bytes.assign(S, 0);
  c.recompute.assign(S, 0);
  // The last layer each layer's output is needed by.
  const int devices = S / plan.chunks;
  std::vector<int64_t> step(devices, 0);  // per device: its stages' optimizer steps
  std::vector<int> last_use(L, -1);
  for (const models::Edge& e : pr.edges) last_use[e.from] = std::max(last_use[e.from], e.to);
  for (int k = 0; k < S; ++k) {
    const planner::StagePlan& st = plan.stages[k];
    int64_t f = 0, b = 0, w = 0, stash = 0, pending = 0, params = 0, opt = 0, work = 0, loaded = 0;
    for (int li = st.first_layer; li < st.end_layer; ++li) {
      const models::LayerProfile& l = pr.layers[li];
      if (l.is_data_loading) {
        loaded += l.output_bytes;
      } else {
        f += l.forward_ns;
        b += l.backward_input_ns;
        w += l.backward_weight_ns;
      }
      stash += l.stash_bytes;
      pending += l.weight_pending_bytes;
      params += l.parameter_bytes;
      opt += l.optimizer_bytes;
      work = std::max(work, l.workspace_bytes);
      step[k % devices] += l.step_ns;
    }
    c.forward_ns[k] = scaled(f);
    c.backward_input_ns[k] = scaled(b);
    c.backward_weight_ns[k] = scaled(w);
    c.stash_bytes_per_micro_batch[k] = scaled(stash);
    c.weight_pending_bytes_per_micro_batch[k] = scaled(pending);
    c.working_bytes[k] = scaled(work);
    c.parameter_bytes[k] = params;
    c.weights_optimizer_bytes[k] = 2 * params + opt;
    c.recompute[k] = st.recompute ? 1 : 0;
    c.allreduce_ns[k] = allreduce_ns(st, params, cluster);
    if (k == 0) c.input_bytes_per_micro_batch[k] = scaled(loaded);
    if (k + 1 < S) {
      const int cut = st.end_layer;
      int64_t act = 0, grad = 0;
      for (int li = 0; li < cut; ++li)
        if (last_use[li] >= cut) {
          act += pr.layers[li].output_bytes;
          if (!pr.layers[li].is_data_loading) grad += pr.layers[li].output_bytes;
        }
      c.activation_bytes[k] = scaled(act);
      c.gradient_bytes[k + 1] = scaled(grad);
      c.input_bytes_per_micro_batch[k + 1] = scaled(act);
    }
  }
  if (std::any_of(step.begin(), step.end(), [](int64_t v) { return v > 0; })) c.step_ns = step;
  return c;
}

StageCosts stage_costs_from_predictions(const planner::Plan& plan) {
  const int S = plan.num_stages();
  pipeline_devices(plan);
  StageCosts c = StageCosts::uniform(S, 0, 0, 0);
  c.samples_per_micro_batch = std::max<int64_t>(1, plan.micro_batch_size);
  c.allreduce_ns.assign(S, 0);
  c.weights_optimizer_bytes.assign(S, 0);
  for (int k = 0; k < S; ++k) {
    const planner::StagePrediction& p = plan.stages[k].predicted;
    c.forward_ns[k] = p.forward_ns;
    c.backward_input_ns[k] = p.backward_ns;
    c.allreduce_ns[k] = p.allreduce_ns;
    c.weights_optimizer_bytes[k] = p.weights_optimizer_bytes;
  }
  return c;
}

planner::Schedule schedule_for_plan(const planner::Plan& plan, const StageCosts& costs) {
  const int p = pipeline_devices(plan);
  // Asynchronous plans (PipeDream's m = 1 included) need the replicas' round-robin period and
  // enough micro-batches for the 1F1B warm-up in one simulated iteration, or the unrolled
  // iterations never overlap (a straight vgg16 plan simulated at a quarter of its throughput).
  if (replicated(plan) || (!planner::is_synchronous(plan.schedule) && plan.chunks == 1)) {
    if (plan.chunks > 1) throw InputError("plan: replicated stages with chunks > 1 are not simulated");
    std::vector<bool> ar(plan.num_stages(), false);
    for (int k = 0; k < plan.num_stages() && !costs.allreduce_ns.empty(); ++k) ar[k] = costs.allreduce_ns[k] > 0;
    const std::vector<int> r = replica_counts(plan);
    const int m = planner::is_synchronous(plan.schedule)
                      ? plan.num_micro_batches
                      : planner::round_robin_micro_batches(plan.num_micro_batches, r);
    return planner::make_replicated_schedule(plan.schedule, r, m, ar);
  }
  planner::Schedule s = planner::make_schedule(plan.schedule, p, plan.num_micro_batches, plan.chunks);
  if (costs.allreduce_ns.empty()) return s;
  for (int d = 0; d < p; ++d) {
    auto& ops = s.device_ops[d];
    const bool has_step = !ops.empty() && ops.back().kind == planner::OpKind::step;
    for (int k = d; k < s.num_stages; k += p)
      if (costs.allreduce_ns[k] > 0)
        ops.insert(has_step ? ops.end() - 1 : ops.end(), planner::Op{planner::OpKind::allreduce, k, -1, -1, 0});
  }
  return s;
}

Network network_for_plan(const planner::Plan& plan, const models::Cluster* cluster) {
  if (cluster == nullptr) return Network{};
  const int p = pipeline_devices(plan);
  std::vector<int> device_of;
  if (replicated(plan)) {
    for (const auto& st : plan.stages) device_of.insert(device_of.end(), st.devices.begin(), st.devices.end());
  } else {
    for (int d = 0; d < p; ++d) device_of.push_back(plan.stages[d].devices.at(0));
  }
  return Network::from_cluster(*cluster, std::move(device_of));
}

void check_schedule_on_plan(const planner::Schedule& schedule, const planner::Plan& plan) {
  if (replicated(plan))
    throw InputError("the plan has replicated stages; a schedule of one rank per stage cannot run it");
  const int p = pipeline_devices(plan);
  if (schedule.num_stages != plan.num_stages())
    throw InputError(std::to_string(schedule.num_stages) + " stages, but the plan has " +
                     std::to_string(plan.num_stages()));
  if (schedule.num_devices != p)
    throw InputError(std::to_string(schedule.num_devices) + " ranks, but the plan runs on " + std::to_string(p) +
                     " pipeline devices");
  for (int k = 0; k < schedule.num_stages; ++k)
    if (schedule.stage_device.at(k) != k % p)
      throw InputError("stage " + std::to_string(k) + " is on rank " + std::to_string(schedule.stage_device[k]) +
                       ", but the plan puts it on pipeline device " + std::to_string(k % p) + " (device " +
                       std::to_string(plan.stages[k].devices.at(0)) + ")");
}

}  // namespace pw::sim
