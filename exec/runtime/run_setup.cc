#include "exec/runtime/run_setup.h"

#include <algorithm>
#include <cstring>

#include "exec/device_ops.h"
#include "exec/optimizer.h"
#include "exec/runtime/device_lanes.h"
#include "models/error.h"
#include "planner/schedule_gen.h"

namespace pw::exec {

namespace {

class OptimizerAdapter final : public StageOptimizer {
 public:
  // The state lives where the stage's parameters do (a CUDA stream slot's memory on GPUs).
  OptimizerAdapter(std::vector<Tensor*> p, std::vector<Tensor*> g, const OptimizerOptions& o)
      : opt_(p, std::move(g), o, device_memory(p.empty() ? Device::cpu() : p.front()->device())) {}
  void step() override { opt_.step(); }
  int64_t state_bytes() const override { return opt_.state_bytes(); }
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override { return opt_.state_tensors(); }
  int64_t steps() const override { return opt_.steps(); }
  void set_steps(int64_t s) override { opt_.set_steps(s); }

 private:
  Optimizer opt_;
};

void copy_rows(const Tensor& src, int64_t first, int64_t count, Tensor* dst) {
  if (!dst) return;
  const int64_t row = src.numel() / src.dim(0);
  PW_CHECK(dst->numel() == row * count,
           "data slice shape mismatch: " + dst->shape_string() + " vs rows of " + src.shape_string());
  std::memcpy(dst->data(), src.data() + first * row, static_cast<size_t>(row * count) * sizeof(float));
}

}  // namespace

void BatchSlicer::prepare(int it) {
  draw(it);
  std::lock_guard<std::mutex> lock(mu_);
  hand_out(it);
}

void BatchSlicer::fill(int it, int64_t first, int64_t count, Tensor* data, Tensor* targets) {
  draw(it);
  std::lock_guard<std::mutex> lock(mu_);
  hand_out(it);
  const Batch& b = cache_.at(it);
  copy_rows(b.data, first, count, data);
  copy_rows(b.targets, first, count, targets);
}

void BatchSlicer::draw_ahead(int it) {
  std::lock_guard<std::mutex> draw_lock(draw_mu_);
  const int64_t before = loader_.wait_ns();
  draw_locked(it);
  ahead_ns_ += loader_.wait_ns() - before;
}

DataState BatchSlicer::state() {
  std::lock_guard<std::mutex> lock(mu_);
  return handed_ < 0 ? start_ : after_.at(handed_);
}

void BatchSlicer::restore(const DataState& s) {
  std::lock_guard<std::mutex> draw_lock(draw_mu_);
  loader_.restore(s);
  std::lock_guard<std::mutex> lock(mu_);
  start_ = loader_.state();
  next_ = 0;
  handed_ = -1;
  cache_.clear();
  after_.clear();
}

int64_t BatchSlicer::wait_ns() {
  std::lock_guard<std::mutex> draw_lock(draw_mu_);
  return loader_.wait_ns() - ahead_ns_;
}

void BatchSlicer::draw(int it) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ > it) return;  // drawn already: no need to wait for a draw in progress
  }
  std::lock_guard<std::mutex> draw_lock(draw_mu_);
  draw_locked(it);
}

void BatchSlicer::draw_locked(int it) {
  for (;;) {
    int k;
    std::vector<Batch> done;  // freed here, on the drawing thread, before it allocates the next
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ > it) return;
      k = next_;
      while (!cache_.empty() && cache_.begin()->first < handed_ - 1) {
        done.push_back(std::move(cache_.begin()->second));
        cache_.erase(cache_.begin());
      }
    }
    done.clear();
    Batch b = loader_.next();
    DataState after = loader_.state();
    std::lock_guard<std::mutex> lock(mu_);
    cache_[k] = std::move(b);
    after_[k] = std::move(after);
    next_ = k + 1;
  }
}

void BatchSlicer::hand_out(int it) {
  handed_ = std::max(handed_, it);
  while (!after_.empty() && after_.begin()->first < handed_) after_.erase(after_.begin());
}

namespace {

std::unique_ptr<LayerStageCompute> make_compute(Network& net, const planner::Plan& plan,
                                                const PipelineRunOptions& options,
                                                const std::shared_ptr<BatchSlicer>& slicer) {
  std::vector<StageRange> ranges;
  for (const auto& st : plan.stages) ranges.push_back({st.first_layer, st.end_layer, st.recompute});
  ComputeConfig cc;
  cc.batch = plan.batch;
  cc.micro_batch_size = plan.micro_batch_size;
  cc.asynchronous = !planner::is_synchronous(plan.schedule);
  cc.weight_stashing = true;
  cc.double_buffered = plan.schedule == planner::ScheduleKind::two_bw;
  const OptimizerOptions oo = options.optimizer;
  return std::make_unique<LayerStageCompute>(
      net, ranges, cc,
      [slicer](int it, int64_t first, int64_t count, Tensor* d, Tensor* t) { slicer->fill(it, first, count, d, t); },
      [oo](std::vector<Tensor*> p, std::vector<Tensor*> g) {
        return std::make_unique<OptimizerAdapter>(std::move(p), std::move(g), oo);
      });
}

// The layers of the stages pipeline device `device` runs (any replica of them).
std::vector<bool> device_layers(const planner::Schedule& sch, const planner::Plan& plan, int device) {
  std::vector<bool> held(static_cast<size_t>(plan.stages.back().end_layer), false);
  for (int st = 0; st < sch.num_stages; ++st) {
    const bool runs = sch.stage_replicas.empty()
                          ? sch.stage_device.at(st) == device
                          : std::count(sch.stage_replicas.at(st).begin(), sch.stage_replicas.at(st).end(), device) > 0;
    if (!runs) continue;
    for (int i = plan.stages.at(st).first_layer; i < plan.stages.at(st).end_layer; ++i) held.at(i) = true;
  }
  return held;
}

std::vector<int> stage_end_layers(const planner::Plan& plan) {
  std::vector<int> ends;
  for (const auto& st : plan.stages) ends.push_back(st.end_layer);
  return ends;
}

}  // namespace

RunSetup make_run_setup(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options,
                        const std::function<int(const planner::Schedule&)>& worker_draws, const RankDevice& rank) {
  check_plan_for_model(plan, model, options.schedule ? &*options.schedule : nullptr);
  if (options.steps < 1) throw InputError("--steps: expected >= 1");
  if (options.warmup_steps < 0) throw InputError("--warmup-steps: expected >= 0");
  if (options.prefetch < 0) throw InputError("--prefetch: expected >= 0, got " + std::to_string(options.prefetch));
  RunSetup s;
  s.schedule = schedule_for_run(plan, options);
  s.devices = s.schedule.num_devices;
  const bool replicated = !s.schedule.stage_replicas.empty();
  if (replicated && options.vertical_sync)
    throw InputError("--vertical-sync: not supported with replicated stages yet");
  if (options.prefetch > 0 && worker_draws) s.draw_device = worker_draws(s.schedule);
  s.slicer = std::make_shared<BatchSlicer>(make_data_source(model, options.data_file, options.seed), plan.batch,
                                           s.draw_device >= 0 ? 0 : options.prefetch);
  // An MPI rank holds the weights of the stages it runs only (Network's `held`); rank 0 writes
  // checkpoints and final weights from what the others send (run_ranks.cc).
  const std::vector<bool> held = rank.rank >= 0 ? device_layers(s.schedule, plan, rank.rank) : std::vector<bool>{};
  std::vector<Device> devices(model.layers().size(), Device::cpu());
  if (!options.device.is_cpu()) {
    const Device gpu = rank.rank >= 0 ? rank.gpu : options.device;
    check_device_usable(gpu, "--device");
    s.lanes = rank.rank >= 0 ? rank_lanes(s.devices, rank.rank, gpu) : pipeline_lanes(s.devices, gpu, options.gpus);
    const int replica = rank.rank >= 0 ? replica_index(s.schedule, rank.rank) : 0;
    devices = layer_devices(s.schedule, stage_end_layers(plan), s.lanes, replica);
  }
  if (!held.empty()) s.net = std::make_unique<Network>(model, options.seed, std::move(devices), held);
  else if (options.device.is_cpu()) s.net = std::make_unique<Network>(model, options.seed);
  else s.net = std::make_unique<Network>(model, options.seed, std::move(devices));
  s.compute = make_compute(*s.net, plan, options, s.slicer);
  if (replicated && s.compute->splits_tied_table())
    throw InputError("plan: tied embeddings split across stages are not supported with replicated stages yet");
  return s;
}

void add_replica_computes(RunSetup& setup, const models::Model& model, const planner::Plan& plan,
                          const PipelineRunOptions& options) {
  int most = 1;
  for (int st = 0; st < setup.schedule.num_stages; ++st) most = std::max(most, setup.schedule.replicas(st));
  for (int i = 1; i < most; ++i) {
    if (setup.lanes.empty()) setup.replica_nets.push_back(std::make_unique<Network>(model, options.seed));
    else
      setup.replica_nets.push_back(std::make_unique<Network>(
          model, options.seed, layer_devices(setup.schedule, stage_end_layers(plan), setup.lanes, i)));
    setup.replica_computes.push_back(make_compute(*setup.replica_nets.back(), plan, options, setup.slicer));
  }
}

int replica_index(const planner::Schedule& sch, int device) {
  for (const auto& reps : sch.stage_replicas)
    for (size_t i = 0; i < reps.size(); ++i)
      if (reps[i] == device) return static_cast<int>(i);
  return 0;
}

std::vector<StageCompute*> device_computes(const RunSetup& setup) {
  std::vector<StageCompute*> out;
  for (int d = 0; d < setup.schedule.num_devices; ++d) {
    const int i = replica_index(setup.schedule, d);
    PW_CHECK(i == 0 || i <= static_cast<int>(setup.replica_computes.size()),
             "device " + std::to_string(d) + " is replica " + std::to_string(i) + " but its compute was not built");
    out.push_back(i == 0 ? setup.compute.get() : setup.replica_computes[i - 1].get());
  }
  return out;
}

double run_loss(const RunSetup& setup, int it) {
  const int ls = setup.compute->loss_stage();
  const int r = ls >= 0 ? setup.schedule.replicas(ls) : 1;
  if (r == 1) return setup.compute->loss(it);
  double sum = 0;
  for (int i = 0; i < r; ++i) sum += (i == 0 ? *setup.compute : *setup.replica_computes.at(i - 1)).loss_share(it, i, r);
  return sum;
}

std::vector<NamedTensors> copy_stage_states(LayerStageCompute& compute) {
  std::vector<NamedTensors> out;
  for (int s = 0; s < compute.num_stages(); ++s) {
    NamedTensors v;
    for (auto& [name, t] : compute.checkpoint_state(s).tensors) { v.emplace_back(name, host_copy(*t)); }
    out.push_back(std::move(v));
  }
  return out;
}

void EndToEndClock::step_begins(int step) {
  if (step < first_timed_ || begun_) return;
  begun_ = true;
  t0_ = std::chrono::steady_clock::now();
  wait0_ = slicer_.wait_ns();
}

void EndToEndClock::step_ends(int step) {
  if (!begun_ || step < first_timed_) return;
  ++steps_;
  paused_ns_ += pending_pause_ns_;
  pending_pause_ns_ = 0;
  t1_ = std::chrono::steady_clock::now();
  wait1_ = slicer_.wait_ns();
}

void EndToEndClock::paused(int64_t ns) {
  if (begun_) pending_pause_ns_ += ns;
}

void EndToEndClock::fill(PipelineRunResult& r, int64_t batch) const {
  if (steps_ == 0) return;
  r.wall_s = std::chrono::duration<double>(t1_ - t0_).count() - static_cast<double>(paused_ns_) / 1e9;
  r.end_to_end_samples_per_s = r.wall_s > 0 ? static_cast<double>(steps_ * batch) / r.wall_s : 0;
  r.data_wait_s = static_cast<double>(wait1_ - wait0_) / 1e9;
  r.data_bound = data_loading_bound(r.data_wait_s, r.wall_s);
}

int64_t median_ns(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool checkpoint_due(const PipelineRunOptions& options, int done, int total, bool stop) {
  if (options.checkpoint_dir.empty()) return false;
  return done == total || stop || (options.checkpoint_every > 0 && done % options.checkpoint_every == 0);
}

}  // namespace pw::exec
