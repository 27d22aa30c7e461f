#include "exec/runtime/run_pipeline.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "exec/checkpoint.h"
#include "exec/data.h"
#include "exec/numerics.h"
#include "exec/trainer.h"
#include "exec/network.h"
#include "exec/runtime/run_compute.h"
#include "models/error.h"
#include "planner/schedule_gen.h"

namespace pw::exec {

namespace {

class OptimizerAdapter final : public StageOptimizer {
 public:
  OptimizerAdapter(std::vector<Tensor*> p, std::vector<Tensor*> g, const OptimizerOptions& o)
      : opt_(std::move(p), std::move(g), o) {}
  void step() override { opt_.step(); }
  int64_t state_bytes() const override { return opt_.state_bytes(); }
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override { return opt_.state_tensors(); }
  int64_t steps() const override { return opt_.steps(); }
  void set_steps(int64_t s) override { opt_.set_steps(s); }

 private:
  Optimizer opt_;
};

// Draws one mini-batch per iteration from a (sequential, not thread-safe) DataSource and
// hands out row slices of it to the stage threads.
class BatchSlicer {
 public:
  BatchSlicer(std::unique_ptr<DataSource> src, int64_t batch) : src_(std::move(src)), batch_(batch) {}
  // Draws the mini-batches up to iteration `it` (the driver calls this before timing it).
  void prepare(int it) {
    std::lock_guard<std::mutex> lock(mu_);
    draw(it);
  }
  void fill(int it, int64_t first, int64_t count, Tensor* data, Tensor* targets) {
    std::lock_guard<std::mutex> lock(mu_);
    draw(it);
    const Batch& b = cache_.at(it);
    copy_rows(b.data, first, count, data);
    copy_rows(b.targets, first, count, targets);
  }
  // The source's position after the mini-batches drawn so far (at an iteration boundary: after
  // the last finished iteration's).
  DataState state() {
    std::lock_guard<std::mutex> lock(mu_);
    return src_->state();
  }
  void restore(const DataState& s) {
    std::lock_guard<std::mutex> lock(mu_);
    src_->restore(s);
  }
  std::string describe() const { return src_->describe(); }

 private:
  void draw(int it) {
    while (next_ <= it) {
      cache_[next_] = src_->next(batch_);
      ++next_;
    }
    while (!cache_.empty() && cache_.begin()->first < it - 1) cache_.erase(cache_.begin());
  }
  static void copy_rows(const Tensor& src, int64_t first, int64_t count, Tensor* dst) {
    if (!dst) return;
    const int64_t row = src.numel() / src.dim(0);
    PW_CHECK(dst->numel() == row * count, "data slice shape mismatch: " + dst->shape_string() + " vs rows of " +
                                              src.shape_string());
    std::memcpy(dst->data(), src.data() + first * row, static_cast<size_t>(row * count) * sizeof(float));
  }
  std::mutex mu_;
  std::unique_ptr<DataSource> src_;
  int64_t batch_;
  int next_ = 0;
  std::map<int, Batch> cache_;
};

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

void check_plan_for_model(const planner::Plan& plan, const models::Model& model) {
  const int L = static_cast<int>(model.layers().size());
  const int S = plan.num_stages();
  if (S < 1) throw InputError("plan: no stages");
  if (S > L)
    throw InputError("plan: " + std::to_string(S) + " stages but model \"" + model.name() + "\" has only " +
                     std::to_string(L) + " layers");
  int expect = 0;
  for (int s = 0; s < S; ++s) {
    const auto& st = plan.stages[s];
    const std::string at = "plan: /stages/" + std::to_string(s);
    if (st.first_layer != expect || st.end_layer <= st.first_layer || st.end_layer > L)
      throw InputError(at + ": layers [" + std::to_string(st.first_layer) + ", " + std::to_string(st.end_layer) +
                       ") do not continue the cover of model \"" + model.name() + "\" (" + std::to_string(L) +
                       " layers) at layer " + std::to_string(expect));
    if (!st.layer_names.empty()) {
      for (int l = st.first_layer; l < st.end_layer; ++l) {
        const size_t k = static_cast<size_t>(l - st.first_layer);
        if (k >= st.layer_names.size() || st.layer_names[k] != model.layers()[l].name)
          throw InputError(at + "/layer_names: expected \"" + model.layers()[l].name + "\" at layer " +
                           std::to_string(l) + " of model \"" + model.name() + "\"");
      }
    }
    if (st.replicas() > 1)
      throw InputError(at + ": " + std::to_string(st.replicas()) +
                       " replicas; the runtime runs one device per stage (replicated stages are not supported)");
    expect = st.end_layer;
  }
  if (expect != L)
    throw InputError("plan: stages cover layers [0, " + std::to_string(expect) + ") but model \"" + model.name() +
                     "\" has " + std::to_string(L) + " layers");
  if (plan.micro_batch_size < 1 || plan.num_micro_batches < 1)
    throw InputError("plan: micro_batch_size and num_micro_batches must be >= 1");
  if (plan.batch != plan.micro_batch_size * plan.num_micro_batches)
    throw InputError("plan: batch " + std::to_string(plan.batch) + " is not micro_batch_size x num_micro_batches (" +
                     std::to_string(plan.micro_batch_size) + " x " + std::to_string(plan.num_micro_batches) + ")");
  if (plan.chunks < 1 || S % plan.chunks != 0)
    throw InputError("plan: " + std::to_string(S) + " stages are not a multiple of chunks = " +
                     std::to_string(plan.chunks));
  try {
    planner::make_schedule(plan.schedule, S / plan.chunks, plan.num_micro_batches, plan.chunks);
  } catch (const InputError& e) {
    throw InputError("plan: schedule " + std::string(planner::to_string(plan.schedule)) + " with " +
                     std::to_string(S / plan.chunks) + " devices and " + std::to_string(plan.num_micro_batches) +
                     " micro-batches: " + e.what());
  }
}

planner::Plan even_plan(const models::Model& model, int stages, int num_micro_batches, int64_t micro_batch_size,
                        planner::ScheduleKind kind, bool recompute, int chunks) {
  const int L = static_cast<int>(model.layers().size());
  const int V = stages * chunks;
  if (stages < 1) throw InputError("--stages: expected >= 1");
  if (V > L)
    throw InputError("--stages: " + std::to_string(V) + " (virtual) stages but model \"" + model.name() +
                     "\" has only " + std::to_string(L) + " layers");
  planner::Plan p;
  p.model = model.name();
  p.partitioner = "even";
  p.objective = planner::is_synchronous(kind) ? "sync" : "pipedream";
  p.schedule = kind;
  p.chunks = chunks;
  p.micro_batch_size = micro_batch_size;
  p.num_micro_batches = num_micro_batches;
  p.batch = micro_batch_size * num_micro_batches;
  p.num_devices_used = stages;
  for (int s = 0; s < V; ++s) {
    planner::StagePlan st;
    st.first_layer = s * L / V;
    st.end_layer = (s + 1) * L / V;
    for (int l = st.first_layer; l < st.end_layer; ++l) st.layer_names.push_back(model.layers()[l].name);
    st.devices = {s % stages};
    st.recompute = recompute;
    p.stages.push_back(st);
  }
  return p;
}

PipelineRunResult run_pipeline(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options,
                               const std::function<void(const StepReport&)>& on_step) {
  check_plan_for_model(plan, model);
  if (options.steps < 1) throw InputError("--steps: expected >= 1");
  if (options.warmup_steps < 0) throw InputError("--warmup-steps: expected >= 0");
  const int devices = plan.num_stages() / plan.chunks;
  planner::Schedule schedule = planner::make_schedule(plan.schedule, devices, plan.num_micro_batches, plan.chunks);
  auto slicer = std::make_shared<BatchSlicer>(make_data_source(model, options.data_file, options.seed), plan.batch);
  Network net(model, options.seed);
  std::vector<StageRange> ranges;
  for (const auto& st : plan.stages) ranges.push_back({st.first_layer, st.end_layer, st.recompute});
  ComputeConfig cc;
  cc.batch = plan.batch;
  cc.micro_batch_size = plan.micro_batch_size;
  cc.asynchronous = !planner::is_synchronous(plan.schedule);
  cc.weight_stashing = true;
  cc.double_buffered = plan.schedule == planner::ScheduleKind::two_bw;
  const OptimizerOptions oo = options.optimizer;
  LayerStageCompute compute(
      net, ranges, cc,
      [slicer](int it, int64_t first, int64_t count, Tensor* d, Tensor* t) { slicer->fill(it, first, count, d, t); },
      [oo](std::vector<Tensor*> p, std::vector<Tensor*> g) {
        return std::make_unique<OptimizerAdapter>(std::move(p), std::move(g), oo);
      });
  RuntimeOptions ro;
  ro.vertical_sync = options.vertical_sync;
  ro.threads_per_worker = options.threads_per_worker;
  ro.timeout = options.timeout;

  // Checkpoint identity: what must match for a resume.
  Json stages = Json::array();
  for (const auto& st : plan.stages) stages.push_back(Json::array({st.first_layer, st.end_layer, st.recompute}));
  Json options_id = optimizer_identity(options.optimizer);
  options_id["seed"] = options.seed;
  options_id["data"] = slicer->describe();
  const Json identity = checkpoint_identity(
      model,
      Json{{"command", "run"}, {"stages", stages}, {"schedule", std::string(planner::to_string(plan.schedule))},
           {"chunks", plan.chunks}, {"micro_batch_size", plan.micro_batch_size},
           {"num_micro_batches", plan.num_micro_batches}, {"batch", plan.batch}},
      options_id);
  const bool checkpointing = !options.checkpoint_dir.empty() || !options.resume_dir.empty();
  if (checkpointing && options.vertical_sync)
    throw InputError(std::string(options.resume_dir.empty() ? "--checkpoint" : "--resume") +
                     ": not supported with --vertical-sync (the weight versions it keeps across steps are not saved)");
  if (checkpointing && plan.schedule == planner::ScheduleKind::two_bw)
    throw InputError(std::string(options.resume_dir.empty() ? "--checkpoint" : "--resume") +
                     ": not supported with 2bw yet (its second weight buffer is not saved)");
  if (checkpointing && compute.splits_tied_table())
    throw InputError(std::string(options.resume_dir.empty() ? "--checkpoint" : "--resume") +
                     ": not supported yet with tied embeddings split across stages (the shared table's copy is not saved)");
  if (options.checkpoint_every < 0) throw InputError("--checkpoint-every: expected >= 0");
  if (options.checkpoint_every > 0 && options.checkpoint_dir.empty())
    throw InputError("--checkpoint-every: needs --checkpoint DIR");
  const int total = options.warmup_steps + options.steps;
  const int S = compute.num_stages();
  PipelineRunResult r;
  if (!options.resume_dir.empty()) {
    const CheckpointInfo info = open_checkpoint(options.resume_dir, identity, S);
    if (info.step >= total)
      throw InputError("--resume " + options.resume_dir + ": the checkpoint is at step " + std::to_string(info.step) +
                       "; " + std::to_string(total) + " steps (warm-up included) leave nothing to run");
    for (int s = 0; s < S; ++s) {
      StageState st = compute.checkpoint_state(s);
      load_stage(options.resume_dir, info, s, st);
      compute.restore_counters(s, st);
    }
    slicer->restore(info.data);
    r.first_step = static_cast<int>(info.step);
  }
  auto save = [&](int done) {
    std::vector<StageState> states;
    for (int s = 0; s < S; ++s) states.push_back(compute.checkpoint_state(s));
    save_checkpoint(options.checkpoint_dir, identity, done, slicer->state(), states);
    r.checkpoint_step = done;
  };

  PipelineRuntime rt(std::move(schedule), compute, ro);
  r.warning = rt.warning();
  for (const auto& c : rt.placement()) r.placement.push_back(c.to_string());
  if (options.on_start) options.on_start();
  for (int i = r.first_step; i < total; ++i) {
    const int local = i - r.first_step;  // the runtime counts its own iterations from 0
    slicer->prepare(local);  // the data loader is not part of the timed pipeline iteration
    int64_t ns = 0;
    try {
      ns = rt.run_iteration();
    } catch (const NumericalFault& e) {
      throw e.shifted(r.first_step);
    }
    ++r.iterations_run;
    if (i >= options.warmup_steps) {
      r.iteration_ns.push_back(ns);
      r.losses.push_back(compute.loss(local));
      if (on_step)
        on_step({i + 1 - options.warmup_steps, options.steps, r.losses.back(), ns,
                 static_cast<double>(plan.batch) * 1e9 / std::max<int64_t>(1, ns)});
    }
    const int done = i + 1;
    const bool stop = options.stop_requested && options.stop_requested();
    if (!options.checkpoint_dir.empty() &&
        (done == total || stop || (options.checkpoint_every > 0 && done % options.checkpoint_every == 0)))
      save(done);
    if (stop) {
      r.stopped = true;
      break;
    }
  }
  const int64_t med = median(r.iteration_ns);
  r.median_iteration_ms = static_cast<double>(med) / 1e6;
  r.samples_per_s = static_cast<double>(plan.batch) * 1e9 / std::max<int64_t>(1, med);
  r.trace = rt.trace();
  r.peak_memory_bytes.assign(devices, 0);
  for (const auto& m : r.trace.memory) r.peak_memory_bytes[m.device] = std::max(r.peak_memory_bytes[m.device], m.bytes);
  for (int s = 0; s < compute.num_stages(); ++s) r.peak_activation_bytes.push_back(compute.peak_activation_bytes(s));
  return r;
}

}  // namespace pw::exec
