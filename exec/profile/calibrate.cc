#include "exec/profile/calibrate.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "exec/device_ops.h"
#include "exec/layer.h"
#include "exec/layers/common.h"
#include "exec/profile/in_context.h"
#include "models/error.h"
#include "models/median.h"

namespace pw::exec {

namespace {

using Clock = std::chrono::steady_clock;
using models::Precision;

std::string measured_shape(const models::LayerSpec& spec, int64_t batch) {
  std::string s = "micro-batch " + std::to_string(batch) + ", output [";
  for (size_t i = 0; i < spec.output_shape.size(); ++i) s += (i ? " x " : "") + std::to_string(spec.output_shape[i]);
  return s + "]";
}

// Seconds of fn() on the timer's device: queued work waited for on both sides.
template <class Fn>
double timed(DeviceTimer& timer, Fn&& fn) {
  timer.synchronize();
  const auto t0 = Clock::now();
  fn();
  timer.synchronize();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

models::GemmTable measure_grid(DeviceTimer& timer, Precision p, const CalibrateOptions& o) {
  models::GemmTable t;
  t.sizes = o.sizes;
  for (int64_t m : o.sizes) {
    double best = 0;  // FLOP/s of this row of the grid
    for (int64_t n : o.sizes)
      for (int64_t k : o.sizes) {
        t.seconds.push_back(timer.gemm_seconds(p, m, n, k, o.repeats));
        best = std::max(best, 2.0 * double(m) * double(n) * double(k) / t.seconds.back());
      }
    if (o.progress)
      o.progress(std::string(models::to_string(p)) + " products, m = " + std::to_string(m) + ": best " +
                 std::to_string(best / 1e12).substr(0, 6) + " TFLOP/s");
  }
  return t;
}

}  // namespace

std::vector<models::MeasuredLayer> time_layer_kinds(DeviceTimer& timer, const models::Model& model, int64_t batch,
                                                    int repeats) {
  const Device dev = timer.device();
  const auto& specs = model.layers();
  std::set<std::string> seen;
  std::vector<models::MeasuredLayer> out;
  std::vector<Tensor> outputs(specs.size());
  Rng rng(1);
  for (size_t i = 0; i < specs.size(); ++i) {
    const models::LayerSpec& spec = specs[i];
    std::vector<std::vector<int64_t>> shapes;
    for (const std::string& p : spec.inputs) shapes.push_back(specs[size_t(model.index_of(p))].output_shape);
    std::unique_ptr<Layer> layer = make_layer(spec, shapes, dev);
    std::vector<Tensor> owned;
    std::vector<const Tensor*> in;
    if (spec.kind == models::LayerKind::input) {
      owned.push_back(copy_to_device(synthetic_data(model, int(i), batch, rng), dev));
      in.push_back(&owned.back());
    }
    for (const std::string& p : spec.inputs) in.push_back(&outputs[size_t(model.index_of(p))]);
    if (layer->is_loss()) {
      owned.push_back(copy_to_device(synthetic_targets(spec, layer->input_shapes().back(), batch, rng), dev));
      in.push_back(&owned.back());
    }
    Context ctx;
    outputs[i] = layer->forward(in, ctx);
    const std::string kind(models::to_string(spec.kind));
    if (spec.kind == models::LayerKind::input || !seen.insert(kind).second) continue;
    const Tensor grad = copy_to_device(synthetic_output(model, int(i), batch, rng, true), dev);
    std::vector<double> f, b, w;
    for (int r = 0; r <= repeats; ++r) {
      Context c;
      const double tf = timed(timer, [&] { (void)layer->forward(in, c); });
      const double tb = timed(timer, [&] { (void)layer->backward_input(in, c, grad); });
      const double tw = timed(timer, [&] { layer->backward_weight(in, c, grad); });
      if (r == 0) continue;  // untimed first run
      f.push_back(tf);
      b.push_back(tb);
      w.push_back(tw);
    }
    out.push_back({kind, measured_shape(spec, batch), models::median_of(f), models::median_of(b),
                   layer->has_weight_grad() ? models::median_of(w) : 0.0});
  }
  return out;
}

models::DeviceSpec calibrate(DeviceTimer& timer, const CalibrateOptions& o, const std::string& date,
                             const std::string& command) {
  PW_CHECK(!o.sizes.empty(), "calibrate needs at least one size");
  models::MeasuredDevice m;
  m.base = o.base;
  m.provenance = timer.provenance();
  m.provenance.date = date;
  m.provenance.command = command;
  if (o.progress) o.progress("copy of " + std::to_string(o.copy_bytes >> 20) + " MiB");
  m.copy_bytes_per_s = timer.copy_bytes_per_s(o.copy_bytes, o.repeats);
  m.launch_seconds = timer.launch_seconds(o.repeats);
  for (Precision pr : o.precisions) {
    if (timer.supports(pr)) m.table(pr) = measure_grid(timer, pr, o);
    else if (o.progress) o.progress(std::string(models::to_string(pr)) + " products: not run on this device, skipped");
  }
  if (o.layer_model != nullptr) {
    if (o.progress) o.progress("layer kinds of " + o.layer_model->name());
    m.layers = time_layer_kinds(timer, *o.layer_model, o.layer_batch, o.repeats);
  }
  return models::measured_device(o.name, m, o.memory_bytes);
}

}  // namespace pw::exec
