#include "exec/runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "exec/data/data.h"
#include "exec/data/loader.h"
#include "exec/device_ops.h"
#include "exec/layers/network.h"
#include "exec/numerics.h"
#include "exec/runtime/checkpoint.h"
#include "models/error.h"

namespace pw::exec {

namespace {

// Throws NumericalFault naming the first layer (in order) whose parameter (or gradient) tensor
// is not finite. On a device, the check runs there with one read-back for all the tensors.
void check_layers(Network& net, int64_t step, bool gradients) {
  std::vector<Tensor*> tensors;
  std::vector<int> layer_of;
  for (int l = 0; l < net.size(); ++l)
    for (Tensor* t : gradients ? net.layer(l).gradients() : net.layer(l).parameters()) {
      tensors.push_back(t);
      layer_of.push_back(l);
    }
  const std::vector<bool> finite = finite_flags(tensors);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!finite[i])
      throw NumericalFault(step, 0, net.layer(layer_of[i]).name(),
                           gradients ? "weight gradient" : "weights after the update", nonfinite_kind(*tensors[i]));
}

// The checkpoint state of a run whose tensors may live on a device. checkpoint.cc reads and
// writes host memory, so each device tensor has a host copy here: downloaded before a save,
// uploaded after a load (exact copies: a resume is bitwise, and the file is the host run's).
// Host tensors are used in place (no copy).
class CheckpointMirror {
 public:
  explicit CheckpointMirror(const StageState& state) : state_(state), host_(state) {
    copies_.reserve(state.tensors.size());  // host_ points into copies_
    for (auto& [name, t] : host_.tensors)
      if (!t->device().is_cpu()) {
        copies_.emplace_back(t->shape());
        t = &copies_.back();
      }
  }
  // The state to save, with the device tensors' current values and the given counters.
  const StageState& for_save(int64_t optimizer_steps, int64_t weight_version) {
    for (size_t i = 0; i < state_.tensors.size(); ++i)
      if (host_.tensors[i].second != state_.tensors[i].second)
        copy_to_host(*state_.tensors[i].second, host_.tensors[i].second->data());
    host_.optimizer_steps = optimizer_steps;
    host_.weight_version = weight_version;
    return host_;
  }
  // Loads stage 0 of the checkpoint into the run's tensors; returns the optimizer steps.
  int64_t load(const std::string& dir, const CheckpointInfo& info) {
    load_stage(dir, info, 0, host_);
    for (size_t i = 0; i < state_.tensors.size(); ++i)
      if (host_.tensors[i].second != state_.tensors[i].second)
        copy_from_host(host_.tensors[i].second->data(), *state_.tensors[i].second);
    return host_.optimizer_steps;
  }

 private:
  StageState state_;  // the run's tensors
  StageState host_;   // the same, device tensors replaced by their host copies
  std::vector<Tensor> copies_;
};

// The [1] loss of a micro-batch as a host value (waits for the device).
float read_loss(const Tensor& loss) {
  float l = 0;
  copy_to_host(loss, &l);
  return l;
}

}  // namespace

Json optimizer_identity(const OptimizerOptions& o) {
  return Json{{"optimizer", o.kind == OptimizerKind::adam ? "adam" : "sgd"},
              {"lr", o.lr},
              {"momentum", o.momentum},
              {"beta1", o.beta1},
              {"beta2", o.beta2},
              {"eps", o.eps},
              {"weight_decay", o.weight_decay}};
}

TrainResult train(const models::Model& model, const TrainOptions& o,
                  const std::function<void(const StepProgress&)>& on_step) {
  if (o.steps < 1) throw InputError("--steps: expected >= 1, got " + std::to_string(o.steps));
  if (o.batch < 1) throw InputError("--batch: expected >= 1, got " + std::to_string(o.batch));
  const int64_t mb = o.micro_batch == 0 ? o.batch : o.micro_batch;
  if (mb < 1 || o.batch % mb != 0)
    throw InputError("--micro-batch: expected a divisor of the batch " + std::to_string(o.batch) + ", got " +
                     std::to_string(o.micro_batch));
  if (o.checkpoint_every < 0) throw InputError("--checkpoint-every: expected >= 0");
  if (o.checkpoint_every > 0 && o.checkpoint_dir.empty())
    throw InputError("--checkpoint-every: needs --checkpoint DIR");
  // Peak memory: the host's allocator, or the device's caching allocator for a device run.
  MemoryResource& alloc = device_memory(o.device);
  const int64_t live_before = alloc.live_bytes();
  alloc.reset_peak();
  if (o.prefetch < 0) throw InputError("--prefetch: expected >= 0, got " + std::to_string(o.prefetch));
  const int64_t m = o.batch / mb;
  // The loader's unit is a micro-batch: `prefetch` mini-batches are prefetch * m of them.
  DataLoader data(make_data_source(model, o.data_file, o.seed), mb, static_cast<int>(o.prefetch * m));
  Network net(model, o.seed, o.device);
  LayerRange range(net, 0, net.size());
  if (!range.has_loss() || range.outputs().size() != 1)
    throw InputError("model \"" + model.name() + "\": training needs exactly one output, a loss layer");
  int data_slot = -1, target_slot = -1;
  for (size_t k = 0; k < range.inputs().size(); ++k) {
    if (range.inputs()[k].name == kDataInput) data_slot = static_cast<int>(k);
    if (range.inputs()[k].name == kTargetInput) target_slot = static_cast<int>(k);
  }
  PW_CHECK(data_slot >= 0 && target_slot >= 0 && range.inputs().size() == 2, "unexpected model inputs");
  const std::string loss_layer = range.outputs().at(0).name;
  Optimizer opt(net.parameters(), net.gradients(), o.optimizer, alloc);

  // Checkpoint identity and state.
  Json options = optimizer_identity(o.optimizer);
  options["seed"] = o.seed;
  options["data"] = data.describe();
  const Json identity = checkpoint_identity(model,
                                            Json{{"command", "train"},
                                                 {"stages", Json::array({Json::array({0, net.size()})})},
                                                 {"batch", o.batch},
                                                 {"micro_batch", mb}},
                                            options);
  StageState run_state;
  add_layer_parameters(net, 0, net.size(), run_state);
  add_optimizer_state(opt.state_tensors(), run_state);
  CheckpointMirror state(run_state);

  TrainResult res;
  res.data = data.describe();
  res.parameter_bytes = net.parameter_bytes();
  res.optimizer_bytes = opt.state_bytes();
  if (!o.resume_dir.empty()) {
    const CheckpointInfo info = open_checkpoint(o.resume_dir, identity, 1);
    if (info.step >= o.steps)
      throw InputError("--resume " + o.resume_dir + ": the checkpoint is at step " + std::to_string(info.step) +
                       "; --steps " + std::to_string(o.steps) + " leaves nothing to run");
    opt.set_steps(state.load(o.resume_dir, info));
    data.restore(info.data);
    res.first_step = info.step;
  }
  auto save = [&](int64_t done) {
    save_checkpoint(o.checkpoint_dir, identity, done, data.state(), {state.for_save(opt.steps(), done)});
    res.checkpoint_step = done;
  };

  const auto t0 = std::chrono::steady_clock::now();
  const int64_t wait0 = data.wait_ns();
  std::vector<int64_t> step_ns;
  for (int64_t step = res.first_step; step < o.steps; ++step) {
    const auto step_t0 = std::chrono::steady_clock::now();
    const int64_t step_wait0 = data.wait_ns();
    net.zero_grad();
    double loss = 0;
    for (int64_t j = 0; j < m; ++j) {
      Batch b = data.next();
      std::vector<Tensor> in(2);
      in[data_slot] = placed_on(std::move(b.data), o.device);
      in[target_slot] = placed_on(std::move(b.targets), o.device);
      std::vector<Tensor> out = range.forward(static_cast<int>(j), std::move(in), step, j * mb);
      const float l = read_loss(out.at(0));
      if (!std::isfinite(l)) throw NumericalFault(step + 1, 0, loss_layer, "loss", std::isnan(l) ? "NaN" : "Inf");
      loss += l;
      Tensor scale({1});
      scale.data()[0] = 1.0f / static_cast<float>(m);
      std::vector<Tensor> g;
      g.push_back(placed_on(std::move(scale), o.device));
      range.backward(static_cast<int>(j), std::move(g));
    }
    check_layers(net, step + 1, true);
    opt.step();
    check_layers(net, step + 1, false);
    loss /= static_cast<double>(m);
    res.losses.push_back(loss);
    const int64_t done = step + 1;
    const auto now = std::chrono::steady_clock::now();
    step_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(now - step_t0).count() -
                      (data.wait_ns() - step_wait0));
    const double el = std::chrono::duration<double>(now - t0).count();
    if (on_step) {
      StepProgress p;
      p.step = done;
      p.steps = o.steps;
      p.loss = loss;
      p.elapsed_s = el;
      const double run = static_cast<double>(done - res.first_step);
      p.samples_per_s = el > 0 ? run * static_cast<double>(o.batch) / el : 0;
      p.eta_s = el / run * static_cast<double>(o.steps - done);
      on_step(p);
    }
    const bool stop = o.stop_requested && o.stop_requested();
    if (!o.checkpoint_dir.empty() &&
        (done == o.steps || stop || (o.checkpoint_every > 0 && done % o.checkpoint_every == 0)))
      save(done);
    if (stop) {
      res.stopped = true;
      break;
    }
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.samples_per_s =
      res.seconds > 0 ? static_cast<double>(static_cast<int64_t>(res.losses.size()) * o.batch) / res.seconds : 0;
  res.end_to_end_samples_per_s = res.samples_per_s;
  std::sort(step_ns.begin(), step_ns.end());
  const size_t n = step_ns.size();
  const double med_ns = n == 0 ? 0 : n % 2 ? double(step_ns[n / 2]) : 0.5 * double(step_ns[n / 2 - 1] + step_ns[n / 2]);
  res.step_ms = med_ns / 1e6;
  res.step_samples_per_s = med_ns > 0 ? static_cast<double>(o.batch) * 1e9 / med_ns : 0;
  res.data_wait_s = static_cast<double>(data.wait_ns() - wait0) / 1e9;
  res.data_bound = data_loading_bound(res.data_wait_s, res.seconds);
  res.peak_memory_bytes = alloc.peak_bytes() - live_before;
  return res;
}

void to_json(Json& j, const TrainRecord& t) {
  const TrainOptions& o = t.options;
  const TrainResult& r = t.result;
  j = Json{{"format", "pipewright.train-result/1"},
           {"model", t.model},
           {"steps", o.steps},
           {"batch", o.batch},
           {"micro_batch", o.micro_batch == 0 ? o.batch : o.micro_batch},
           {"optimizer", t.optimizer},
           {"lr", o.optimizer.lr},
           {"seed", o.seed},
           {"threads", t.threads},
           {"device", o.device.to_string()},
           {"data", r.data},
           {"losses", r.losses},
           {"samples_per_s", r.samples_per_s},
           {"seconds", r.seconds},
           {"end_to_end_samples_per_s", r.end_to_end_samples_per_s},
           {"step_ms", r.step_ms},
           {"step_samples_per_s", r.step_samples_per_s},
           {"data_wait_s", r.data_wait_s},
           {"data_bound", r.data_bound},
           {"prefetch", o.prefetch},
           {"peak_memory_bytes", r.peak_memory_bytes},
           {"parameter_bytes", r.parameter_bytes},
           {"optimizer_bytes", r.optimizer_bytes},
           {"first_step", r.first_step},
           {"completed_steps", r.first_step + static_cast<int64_t>(r.losses.size())},
           {"stopped", r.stopped}};
  if (r.checkpoint_step >= 0) j["checkpoint"] = {{"dir", o.checkpoint_dir}, {"step", r.checkpoint_step}};
}

}  // namespace pw::exec
