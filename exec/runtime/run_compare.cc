#include "exec/runtime/run_compare.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

#include "exec/data/data.h"
#include "exec/device_streams.h"
#include "exec/layers/network.h"
#include "exec/machine/machine_load.h"
#include "exec/machine/pinning.h"
#include "exec/numerics.h"
#include "exec/profile/handoff.h"
#include "exec/profile/measure_memory.h"
#include "exec/profile/profiler.h"
#include "exec/runtime/device_lanes.h"
#include "exec/runtime/run_pipeline.h"
#include "exec/runtime/run_setup.h"
#include "models/cost.h"
#include "models/json_util.h"
#include "planner/schedule.h"
#include "sim/compare_svg.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"
#include "sim/replay.h"

namespace pw::exec {

std::vector<int64_t> measure_step_ns(const models::Model& model, const planner::Plan& plan,
                                     const OptimizerOptions& optimizer, Device device) {
  bind_thread(device);
  Network net(model, 1, device);
  const int devices = plan.num_stages() / std::max(1, plan.chunks);
  std::vector<int64_t> out(devices, 0);
  constexpr int kWarmup = 3, kTimed = 9;
  for (int d = 0; d < devices; ++d) {
    // As the run: one optimizer per stage (LayerStageCompute), the worker's stages in turn.
    struct StageStep {
      std::unique_ptr<LayerRange> range;
      std::vector<Tensor*> params, grads;
      std::unique_ptr<Optimizer> opt;
    };
    std::vector<StageStep> stages;
    for (int s = d; s < plan.num_stages(); s += devices) {
      StageStep st;
      st.range = std::make_unique<LayerRange>(net, plan.stages[s].first_layer, plan.stages[s].end_layer);
      st.params = st.range->parameters();
      st.grads = st.range->gradients();
      if (st.params.empty()) continue;
      st.opt = std::make_unique<Optimizer>(st.params, st.grads, optimizer, device_memory(device));
      stages.push_back(std::move(st));
    }
    if (stages.empty()) continue;
    std::vector<int64_t> t;
    for (int rep = 0; rep < kWarmup + kTimed; ++rep) {
      const auto a = std::chrono::steady_clock::now();
      bool finite = true;
      for (StageStep& st : stages) {
        for (bool ok : finite_flags(st.grads)) finite = finite && ok;
        st.opt->step();
        for (bool ok : finite_flags(st.params)) finite = finite && ok;
        st.range->zero_grad();
      }
      const auto b = std::chrono::steady_clock::now();
      synchronize(device);  // the zeroing the run leaves queued on a GPU, untimed
      PW_CHECK(finite, "non-finite weights while timing the optimizer step");
      if (rep >= kWarmup) t.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
    }
    out[d] = median_ns(std::move(t));
  }
  return out;
}

int64_t measure_draw_ns(const models::Model& model, const std::string& data_file, uint64_t seed, int64_t rows) {
  std::unique_ptr<DataSource> src = make_data_source(model, data_file, seed);
  src->next(rows);  // first draw: pages and tables warmed
  std::vector<int64_t> t;
  for (int rep = 0; rep < 5; ++rep) {
    const auto a = std::chrono::steady_clock::now();
    src->next(rows);
    t.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - a).count());
  }
  return median_ns(std::move(t));
}

int64_t in_context_pass_ns(const models::Profile& profile) {
  int64_t ns = 0;
  for (const auto& l : profile.layers) ns += l.forward_ns + l.backward_input_ns + l.backward_weight_ns + l.step_ns;
  return ns;
}

bool price_on_own_cores(sim::StageCosts& costs, const planner::Plan& plan, const planner::Schedule& sched,
                        const std::vector<models::Profile>& per_copy) {
  if (sched.num_devices < 2 || static_cast<int>(per_copy.size()) != sched.num_devices || !sched.stage_replicas.empty())
    return false;
  std::vector<sim::StageCosts> own;
  for (const models::Profile& p : per_copy) own.push_back(sim::stage_costs_from_plan(plan, p));
  for (int s = 0; s < sched.num_stages; ++s) {
    const sim::StageCosts& c = own.at(sched.stage_device.at(s));
    costs.forward_ns.at(s) = c.forward_ns.at(s);
    costs.backward_input_ns.at(s) = c.backward_input_ns.at(s);
    costs.backward_weight_ns.at(s) = c.backward_weight_ns.at(s);
  }
  if (!costs.step_ns.empty())
    for (int d = 0; d < sched.num_devices; ++d)
      if (!own[d].step_ns.empty()) costs.step_ns.at(d) = own[d].step_ns.at(d);
  return true;
}

bool worker_passes(const planner::Plan& plan, MeasureOptions& mo) {
  mo.copy_layers.clear();
  mo.copy_order.clear();
  mo.trimmed_mean = false;
  const int devices = plan.num_stages() / std::max(1, plan.chunks);
  bool replicated = false;
  for (const auto& st : plan.stages) replicated = replicated || st.replicas() > 1;
  if (devices < 2 || replicated || !planner::is_synchronous(plan.schedule) || mo.co_run_workers != devices)
    return false;
  // The order does not depend on the costs for these schedules' shapes; unit costs.
  const planner::Schedule sched = sim::schedule_for_plan(plan, sim::StageCosts::uniform(plan.num_stages(), 1, 1, 1));
  if (sched.num_devices != devices) return false;
  const int n = plan.stages.back().end_layer;
  mo.copy_layers.assign(devices, std::vector<bool>(n, false));
  mo.copy_order.assign(devices, {});
  for (int s = 0; s < plan.num_stages(); ++s)
    for (int i = plan.stages[s].first_layer; i < plan.stages[s].end_layer; ++i)
      mo.copy_layers.at(sched.stage_device.at(s)).at(i) = true;
  using K = PassOp::Kind;
  for (int d = 0; d < devices; ++d)
    for (const planner::Op& op : sched.device_ops[d]) {
      K kind;
      switch (op.kind) {
        case planner::OpKind::F: kind = K::F; break;
        case planner::OpKind::B: kind = K::B; break;
        case planner::OpKind::W: kind = K::W; break;
        case planner::OpKind::BW: kind = K::BW; break;
        default: continue;  // the step runs after each step of the order; transfers are not compute
      }
      mo.copy_order[d].push_back(
          {kind, op.micro_batch, plan.stages.at(op.stage).first_layer, plan.stages.at(op.stage).end_layer});
    }
  mo.trimmed_mean = true;
  return true;
}

namespace {

MeasureOptions prediction_measure_options(const planner::Plan& plan, int threads, const OptimizerOptions& optimizer,
                                          Device device) {
  MeasureOptions mo;
  mo.micro_batch = plan.micro_batch_size;
  mo.reps = kInContextTimedPasses;
  mo.warmup = kInContextWarmupPasses;
  mo.threads = threads;
  mo.rounds = kInContextRounds;
  mo.co_run_workers = plan.num_stages() / plan.chunks;
  // As the run steps: once per mini-batch of M micro-batches (synchronous), else after each.
  mo.passes_per_step = planner::is_synchronous(plan.schedule) ? std::max(1, plan.num_micro_batches) : 1;
  if (!device.is_cpu()) {  // one copy of whole-model passes on the GPU's first stream slot, medians
    mo.co_run_workers = 1;
    mo.device = Device::cuda(device.index);
  }
  worker_passes(plan, mo);
  mo.optimizer = optimizer.kind == OptimizerKind::adam ? "adam" : (optimizer.momentum > 0 ? "sgd-momentum" : "sgd");
  return mo;
}

// What the comparison on GPUs adds (exec/runtime/device_compare.h), from the prediction's
// trace; the measured peaks are the caller's.
GpuComparison gpu_comparison(const Prediction& p, const std::vector<Device>& lanes) {
  GpuComparison g;
  g.cards = cards_of_lanes(lanes);
  g.profile_device = device_name(g.cards.front().gpu);
  for (const Card& c : g.cards) g.predicted_peak_bytes.push_back(card_peak_bytes(p.trace, c.workers));
  g.note = shared_card_note(g.cards);
  if (!g.note.empty())
    g.shared_iteration_ms = static_cast<double>(shared_card_bound_ns(p.trace, p.report.iteration_ns, g.cards)) / 1e6;
  return g;
}

}  // namespace

int prediction_round_passes(int rounds_done, int64_t pass_ns) {
  const int first = (kInContextTimedPasses + kInContextRounds - 1) / kInContextRounds;
  if (rounds_done == 0 || pass_ns <= 0) return first;
  const int64_t target =
      std::max<int64_t>(kInContextTimedPasses, std::min<int64_t>(kProfileMaxPasses, kProfileSpanNs / pass_ns));
  return static_cast<int>(std::max<int64_t>(first, (target + kInContextRounds - 1) / kInContextRounds));
}

bool is_compare_round_step(int done, int warmup_steps, int steps) {
  if (steps <= 0) return false;
  const int first = warmup_steps >= 2 ? warmup_steps - 1 : warmup_steps;
  return done == first || (steps >= 4 && done == warmup_steps + (steps + 1) / 2);
}

std::function<void(int, const CopyThreads&)> compare_rounds_between_steps(
    int warmup_steps, int steps, std::function<PredictionMeasurement&()> measurement) {
  return [warmup_steps, steps, measurement = std::move(measurement)](int done, const CopyThreads& workers) {
    if (is_compare_round_step(done, warmup_steps, steps)) measurement().round(&workers);
  };
}

struct PredictionMeasurement::State {
  State(const models::Model& m, const planner::Plan& p, int t, const OptimizerOptions& o, int64_t d, Device dev, int g)
      : model(m),
        plan(p),
        optimizer(o),
        draw_ns(d),
        device(dev),
        gpus(g),
        rounds(m, prediction_measure_options(p, t, o, dev)) {}
  const models::Model& model;
  planner::Plan plan;
  OptimizerOptions optimizer;
  int64_t draw_ns;
  Device device;
  int gpus;
  ProfileInRounds rounds;
  int64_t pass_ns = 0;  // one pass by the first round's medians (prediction_round_passes)
};

PredictionMeasurement::PredictionMeasurement(const models::Model& model, const planner::Plan& plan, int threads,
                                             const OptimizerOptions& optimizer, int64_t draw_ns, Device device,
                                             int gpus)
    : s_(std::make_unique<State>(model, plan, threads, optimizer, draw_ns, device, gpus)) {}

PredictionMeasurement::~PredictionMeasurement() = default;

void PredictionMeasurement::round(const CopyThreads* workers) {
  State& s = *s_;
  if (s.rounds.rounds_done() >= kInContextRounds) return;
  if (!s.device.is_cpu()) workers = nullptr;
  s.rounds.round(prediction_round_passes(s.rounds.rounds_done(), s.pass_ns), workers);
  if (s.rounds.rounds_done() == 1) {
    // The first round's few passes give the pass time; the round is then topped up to as many
    // passes as the later rounds get, so the three weigh alike in the pooled medians (before
    // the timed steps, halfway, after them) instead of the later two deciding them.
    s.pass_ns = in_context_pass_ns(s.rounds.profile());
    const int more = prediction_round_passes(1, s.pass_ns) - s.rounds.timed_passes();
    if (more > 0) s.rounds.top_up(more, workers);
  }
}

int PredictionMeasurement::rounds_done() const { return s_->rounds.rounds_done(); }
int PredictionMeasurement::timed_passes() const { return s_->rounds.timed_passes(); }
int64_t PredictionMeasurement::pass_ns() const { return s_->pass_ns; }

Prediction PredictionMeasurement::predict() {
  while (rounds_done() < kInContextRounds) round();
  const State& s = *s_;
  const models::Model& model = s.model;
  const planner::Plan& plan = s.plan;
  Prediction p;
  std::vector<models::Profile> per_copy;
  p.profile = s.rounds.profile(nullptr, &per_copy);
  sim::StageCosts costs = sim::stage_costs_from_plan(plan, p.profile);
  // The optimizer step as the in-context passes measured it (after each pass's backward, co-run,
  // summed over the device's layers) when the profile has it; the isolated hot loop only for
  // old-style profiles. The isolated loop ran the step 7 times back to back on unchanged
  // gradients and read 15-20% low against the run.
  // (stage_costs_from_plan leaves step_ns empty when the profile has no step times.)
  // On a GPU the in-context step is per layer, with a read-back per layer; the run steps each
  // stage at once (one read-back per check, one multi-tensor update): timed as the run does it.
  if (!s.device.is_cpu() && (planner::is_synchronous(plan.schedule) || !costs.step_ns.empty()))
    costs.step_ns = measure_step_ns(model, plan, s.optimizer, Device::cuda(s.device.index));
  else if (planner::is_synchronous(plan.schedule) && costs.step_ns.empty())
    costs.step_ns = measure_step_ns(model, plan, s.optimizer, Device::cpu());
  planner::Schedule sched = sim::schedule_for_plan(plan, costs);
  if (price_on_own_cores(costs, plan, sched, per_copy)) sched = sim::schedule_for_plan(plan, costs);
  // The draw of the next mini-batch, by the worker that run_pipeline has draw it (loader_device).
  if (s.draw_ns > 0 && planner::is_synchronous(plan.schedule)) {
    const Machine& machine = Machine::instance();
    const int dev = loader_device(sched, machine.assign(sched.num_devices), machine.num_cores());
    if (dev >= 0) {
      costs.data_ns.assign(sched.num_devices, 0);
      costs.data_ns[dev] = s.draw_ns;
    }
  }
  // Transfers between workers cost the runtime's hand-off, measured here with the spin the run
  // will wait with (run_pipeline: transport_spin); free on one worker.
  if (sched.num_devices > 1) {
    HandoffOptions ho;
    ho.spin = transport_spin(sched.num_devices, Machine::instance().num_cores());
    p.handoff_ns = measure_handoff_ns(ho);
  }
  const sim::Network net = p.handoff_ns > 0 ? sim::Network::fixed(p.handoff_ns) : sim::network_for_plan(plan, nullptr);
  sim::SimOptions so;
  so.iterations = 1;
  so.record_trace = true;
  so.schedule_bubble = true;  // the report's three figures (sim/report.h), not "n/a"
  sim::SimResult sr = sim::simulate(sched, costs, net, so);
  p.report = sr.report;
  p.trace = std::move(sr.trace);
  p.costs = costs;
  so.record_trace = false;
  so.schedule_bubble = false;
  p.iteration_ms = static_cast<double>(sr.report.iteration_ns) / 1e6;
  sim::StageCosts held = costs;
  held.working_bytes.assign(held.working_bytes.size(), 0);
  const sim::SimResult sh = sim::simulate(sched, held, net, so);
  for (const auto& d : sh.report.devices) p.peak_memory_bytes.push_back(d.peak_memory_bytes);
  p.working_bytes.assign(p.peak_memory_bytes.size(), 0);
  for (int s = 0; s < sched.num_stages; ++s) {
    int64_t& w = p.working_bytes.at(sched.stage_device.at(s));
    w = std::max(w, costs.working_bytes.at(s));
  }
  if (!s.device.is_cpu()) p.gpu = gpu_comparison(p, pipeline_lanes(sched.num_devices, s.device, s.gpus));
  return p;
}

int64_t prediction_measurement_bytes(const models::Model& model, const planner::Plan& plan, int threads,
                                     const OptimizerOptions& optimizer) {
  if (!models::has_analytic_costs(model)) return 0;
  const MeasureOptions mo = prediction_measure_options(plan, threads, optimizer, Device::cpu());
  const models::Profile bytes = models::analytic_memory_profile(model, plan.micro_batch_size, mo.optimizer);
  const int64_t mb = plan.micro_batch_size;
  int64_t need = 0;
  for (int c = 0; c < std::max(1, mo.co_run_workers); ++c)
    need += in_context_copy_bytes(bytes, mb, mb, mo.copy_layers.empty() ? std::vector<bool>{} : mo.copy_layers.at(c),
                                  mo.copy_order.empty() ? std::vector<PassOp>{} : mo.copy_order.at(c));
  return need;
}

Prediction predict_from_measurement(const models::Model& model, const planner::Plan& plan, int threads,
                                    const OptimizerOptions& optimizer, int64_t draw_ns) {
  PredictionMeasurement m(model, plan, threads, optimizer, draw_ns);
  return m.predict();
}

void write_run_trace(const std::string& file, const planner::Plan& plan, const sim::Trace& measured,
                     int warmup_iterations, const Prediction* prediction, int keep_iterations) {
  sim::RunTrace rt;
  rt.schedule = plan.schedule;
  rt.stages = plan.num_stages();
  rt.chunks = plan.chunks;
  rt.micro_batches = plan.num_micro_batches;
  rt.warmup_iterations = warmup_iterations;
  if (prediction) {
    rt.has_predicted = true;
    rt.predicted = prediction->costs;
    rt.handoff_ns = prediction->handoff_ns;
  }
  rt.trace = measured;
  sim::keep_last_iterations(rt, keep_iterations);
  save_json_file(file, sim::run_trace_to_json(rt));
}

void write_compare_svg(const std::string& file, const planner::Plan& plan, const Prediction& prediction,
                       const sim::Trace& measured, int warmup_iterations, const std::string& model_name) {
  int last = warmup_iterations;
  for (const auto& e : measured.events) last = std::max(last, e.iteration);
  const sim::Trace m = sim::steady_iteration(measured, last);
  const std::string title = model_name + ": " + std::string(planner::to_string(plan.schedule)) + ", " +
                            std::to_string(plan.num_stages()) + " stages, " + std::to_string(plan.num_micro_batches) +
                            " micro-batches of " + std::to_string(plan.micro_batch_size) + " (iteration " +
                            std::to_string(last) + " measured)";
  write_file_atomic(file, sim::compare_svg(prediction.trace, m, title));
}

}  // namespace pw::exec
