#include "exec/runtime/compare_session.h"

#include <algorithm>
#include <utility>

#include "exec/machine/pinning.h"
#include "exec/parallel.h"
#include "exec/runtime/device_lanes.h"
#include "models/optimizer_memory.h"

namespace pw::exec {

CompareMemory compare_memory(const models::Model& model, const planner::Plan& plan, const OptimizerOptions& optimizer,
                             int devices) {
  const models::OptimizerMemory& om = optimizer_memory(optimizer);
  CompareMemory m;
  m.run_bytes = models::estimated_training_bytes(model, om, plan.micro_batch_size, plan.num_micro_batches);
  m.copies_bytes =
      std::max(devices * models::estimated_training_bytes(model, om, plan.micro_batch_size, 1), m.run_bytes);
  return m;
}

bool fits_between_steps(const CompareMemory& memory, int64_t memory_bytes) {
  return memory_bytes > 0 && memory.run_bytes + memory.copies_bytes <= 0.5 * static_cast<double>(memory_bytes);
}

CompareSession::CompareSession(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options,
                               int devices, bool ranks, std::function<void(const std::string&)> note)
    : model_(model),
      plan_(plan),
      options_(options),
      devices_(std::max(1, devices)),
      ranks_(ranks),
      note_(std::move(note)) {
  const int cores = Machine::instance().num_cores();
  threads_ = options.threads_per_worker > 0 ? options.threads_per_worker : std::max(1, cores / devices_);
}

CompareSession::~CompareSession() = default;

bool CompareSession::measure_between_steps(PipelineRunOptions& options, int64_t memory_bytes) {
  if (!options.device.is_cpu()) {
    cards_ = cards_of_lanes(pipeline_lanes(devices_, options.device, options.gpus));
    reset_device_memory_peaks(cards_);
    return false;
  }
  if (ranks_ || !fits_between_steps(compare_memory(model_, plan_, options.optimizer, devices_), memory_bytes))
    return false;
  options.between_steps = compare_rounds_between_steps(options.warmup_steps, options.steps,
                                                       [this]() -> PredictionMeasurement& { return measurement(); });
  return true;
}

PredictionMeasurement& CompareSession::measurement() {
  if (measurement_) return *measurement_;
  set_num_threads(threads_);
  if (note_)
    note_("compare: measuring a profile of " + model_.name() + " at micro-batch " +
          std::to_string(plan_.micro_batch_size) + (options_.between_steps ? ", in rounds between the steps" : "") +
          (options_.device.is_cpu() ? "" : " on " + Device::cuda(options_.device.index).to_string()));
  // Threaded runs draw their data on a background loader that shares a worker's cores
  // (exec/runtime/run_pipeline.h); MPI ranks each draw on their own, not modelled.
  const int64_t draw_ns =
      options_.prefetch > 0 && !ranks_ ? measure_draw_ns(model_, options_.data_file, options_.seed, plan_.batch) : 0;
  measurement_ = std::make_unique<PredictionMeasurement>(model_, plan_, threads_, options_.optimizer, draw_ns,
                                                         options_.device, options_.gpus);
  return *measurement_;
}

Prediction CompareSession::predict() {
  // The run's peaks, before the measurement allocates on the GPUs.
  const std::vector<int64_t> measured = cards_.empty() ? std::vector<int64_t>{} : device_memory_peaks(cards_);
  Allocator::global().release_cache();
  Prediction p = measurement().predict();
  if (p.gpu) p.gpu->measured_peak_bytes = measured;
  return p;
}

}  // namespace pw::exec
