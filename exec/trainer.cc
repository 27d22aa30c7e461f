#include "exec/trainer.h"

#include <chrono>
#include <cmath>

#include "exec/data.h"
#include "exec/network.h"
#include "models/error.h"

namespace pw::exec {

TrainResult train(const models::Model& model, const TrainOptions& o,
                  const std::function<void(const StepProgress&)>& on_step) {
  if (o.steps < 1) throw InputError("--steps: expected >= 1, got " + std::to_string(o.steps));
  if (o.batch < 1) throw InputError("--batch: expected >= 1, got " + std::to_string(o.batch));
  const int64_t mb = o.micro_batch == 0 ? o.batch : o.micro_batch;
  if (mb < 1 || o.batch % mb != 0)
    throw InputError("--micro-batch: expected a divisor of the batch " + std::to_string(o.batch) +
                     ", got " + std::to_string(o.micro_batch));
  Allocator& alloc = Allocator::global();
  const int64_t live_before = alloc.live_bytes();
  alloc.reset_peak();
  auto data = make_data_source(model, o.data_file, o.seed);
  Network net(model, o.seed);
  LayerRange range(net, 0, net.size());
  if (!range.has_loss() || range.outputs().size() != 1)
    throw InputError("model \"" + model.name() + "\": training needs exactly one output, a loss layer");
  int data_slot = -1, target_slot = -1;
  for (size_t k = 0; k < range.inputs().size(); ++k) {
    if (range.inputs()[k].name == kDataInput) data_slot = static_cast<int>(k);
    if (range.inputs()[k].name == kTargetInput) target_slot = static_cast<int>(k);
  }
  PW_CHECK(data_slot >= 0 && target_slot >= 0 && range.inputs().size() == 2, "unexpected model inputs");
  Optimizer opt(net.parameters(), net.gradients(), o.optimizer, alloc);

  TrainResult res;
  res.data = data->describe();
  res.parameter_bytes = net.parameter_bytes();
  res.optimizer_bytes = opt.state_bytes();
  const int64_t m = o.batch / mb;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < o.steps; ++step) {
    net.zero_grad();
    double loss = 0;
    for (int64_t j = 0; j < m; ++j) {
      Batch b = data->next(mb);
      std::vector<Tensor> in(2);
      in[data_slot] = std::move(b.data);
      in[target_slot] = std::move(b.targets);
      std::vector<Tensor> out = range.forward(static_cast<int>(j), std::move(in), step, j * mb);
      loss += out.at(0).data()[0];
      Tensor scale({1});
      scale.data()[0] = 1.0f / static_cast<float>(m);
      std::vector<Tensor> g;
      g.push_back(std::move(scale));
      range.backward(static_cast<int>(j), std::move(g));
    }
    opt.step();
    loss /= static_cast<double>(m);
    if (!std::isfinite(loss))
      throw InputError("training diverged at step " + std::to_string(step + 1) +
                       " (loss is not finite); lower --lr");
    res.losses.push_back(loss);
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (on_step) {
      StepProgress p;
      p.step = step + 1;
      p.steps = o.steps;
      p.loss = loss;
      p.elapsed_s = el;
      p.samples_per_s = el > 0 ? static_cast<double>((step + 1) * o.batch) / el : 0;
      p.eta_s = el / static_cast<double>(step + 1) * static_cast<double>(o.steps - step - 1);
      on_step(p);
    }
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.samples_per_s = res.seconds > 0 ? static_cast<double>(o.steps * o.batch) / res.seconds : 0;
  res.peak_memory_bytes = alloc.peak_bytes() - live_before;
  return res;
}

}  // namespace pw::exec
