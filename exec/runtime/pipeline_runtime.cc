#include "exec/runtime/pipeline_runtime.h"

#include <algorithm>

#include "exec/parallel.h"
#include "models/error.h"
#include "planner/schedule_validate.h"

namespace pw::exec {

WorkerConfig worker_config(const RuntimeOptions& options, int device, const planner::Schedule* schedule,
                           StageCompute* compute, Transport* transport, Transport::Clock::time_point t0) {
  WorkerConfig cfg;
  cfg.device = device;
  cfg.schedule = schedule;
  cfg.compute = compute;
  cfg.transport = transport;
  cfg.vertical_sync = options.vertical_sync;
  cfg.overlap_allreduce = options.overlap_allreduce;
  cfg.bucket_bytes = options.allreduce_bucket_bytes;
  cfg.record_trace = options.record_trace;
  cfg.t0 = t0;
  if (!options.lanes.empty()) cfg.lane = options.lanes.at(static_cast<size_t>(device));
  if (options.make_clock) cfg.clock = options.make_clock(device);
  else if (!cfg.lane.is_cpu()) cfg.clock = make_stream_clock(cfg.lane, t0);
  return cfg;
}

PipelineRuntime::PipelineRuntime(planner::Schedule schedule, StageCompute& compute, RuntimeOptions options)
    : PipelineRuntime(std::move(schedule), std::vector<StageCompute*>{&compute}, std::move(options)) {}

PipelineRuntime::PipelineRuntime(planner::Schedule schedule, std::vector<StageCompute*> computes,
                                 RuntimeOptions options)
    : schedule_(std::move(schedule)),
      computes_(std::move(computes)),
      options_(std::move(options)),
      transport_(std::max(1, schedule_.num_devices), options_.channel_capacity, options_.spin),
      t0_(Clock::now()) {
  planner::validate_schedule(schedule_);
  if (computes_.size() == 1) computes_.assign(std::max(1, schedule_.num_devices), computes_[0]);
  PW_CHECK(static_cast<int>(computes_.size()) == std::max(1, schedule_.num_devices),
           "PipelineRuntime: one compute per device expected");
  for (StageCompute* c : computes_) {
    PW_CHECK(c != nullptr, "PipelineRuntime: null compute");
    if (c->num_stages() != schedule_.num_stages)
      throw InputError("schedule has " + std::to_string(schedule_.num_stages) +
                       " virtual stages but the model is split into " + std::to_string(c->num_stages()));
  }
  if (options_.vertical_sync && planner::is_synchronous(schedule_.kind))
    throw InputError("vertical sync applies to asynchronous schedules only, not " +
                     std::string(planner::to_string(schedule_.kind)));
  const int D = schedule_.num_devices;
  if (!options_.lanes.empty()) {
    if (static_cast<int>(options_.lanes.size()) != D)
      throw InputError("pipeline: " + std::to_string(options_.lanes.size()) + " device lanes for " + std::to_string(D) +
                       " devices");
  }
  trace_.source = "measured";
  trace_.num_devices = D;

  if (options_.pin_threads) {
    const Machine& m = Machine::instance();
    placement_ = m.assign(D);
    warning_ = oversubscription_warning(D, m.num_cores());
  } else {
    placement_.assign(D, CoreSet{});
  }
  for (int d = 0; d < D; ++d)
    workers_.push_back(
        std::make_unique<StageWorker>(worker_config(options_, d, &schedule_, computes_[d], &transport_, t0_)));
  errors_.assign(D, nullptr);
  pin_errors_.assign(D, "");
  remaining_ = D;
  for (int d = 0; d < D; ++d) threads_.emplace_back([this, d] { thread_main(d); });
  // Wait until every thread is pinned so that warnings are complete.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return remaining_ == 0; });
  for (int d = 0; d < D; ++d)
    if (!pin_errors_[d].empty())
      warning_ += (warning_.empty() ? "" : "; ") + std::string("warning: device ") + std::to_string(d) +
                  " not pinned: " + pin_errors_[d];
}

PipelineRuntime::~PipelineRuntime() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void PipelineRuntime::thread_main(int device) {
  const CoreSet cores = placement_[device];
  std::string why;
  if (options_.pin_threads && !cores.cores.empty() && !Machine::instance().bind_current_thread(cores, &why))
    pin_errors_[device] = why;
  if (options_.set_thread_count) {
    const int n = options_.threads_per_worker > 0 ? options_.threads_per_worker
                                                  : static_cast<int>(std::max<size_t>(1, cores.cores.size()));
    set_num_threads(n);
  }
  if (options_.on_worker_start) options_.on_worker_start(device, cores);
  uint64_t seen = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --remaining_;
  }
  cv_.notify_all();
  while (true) {
    int iteration;
    Clock::time_point deadline;
    const std::function<void(int)>* task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      iteration = iteration_arg_;
      deadline = deadline_arg_;
      task = task_;
    }
    std::exception_ptr err;
    try {
      if (task) {
        (*task)(device);
      } else {
        if (options_.at_iteration_start) options_.at_iteration_start(device, iteration);
        workers_[device]->run_iteration(iteration, deadline);
      }
    } catch (...) {
      err = std::current_exception();
      if (!task) transport_.cancel();
    }
    {
      // Moved, not copied: once remaining_ reaches 0 the caller may rethrow, catch and free the
      // exception, so this thread must hold no reference it would drop after the lock.
      std::lock_guard<std::mutex> lock(mu_);
      errors_[device] = std::move(err);
      --remaining_;
    }
    cv_.notify_all();
  }
}

void PipelineRuntime::run_on_workers(const std::function<void(int)>& fn) {
  const int D = schedule_.num_devices;
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &fn;
    remaining_ = D;
    std::fill(errors_.begin(), errors_.end(), nullptr);
    ++generation_;
  }
  cv_.notify_all();
  std::exception_ptr first;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return remaining_ == 0; });
    task_ = nullptr;
    for (auto& e : errors_)
      if (e && !first) first = e;
    std::fill(errors_.begin(), errors_.end(), nullptr);
  }
  if (first) std::rethrow_exception(first);
}

int64_t PipelineRuntime::run_iteration() {
  const int D = schedule_.num_devices;
  const auto start = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    iteration_arg_ = iterations_;
    deadline_arg_ = options_.timeout.count() > 0 ? start + options_.timeout : Clock::time_point::max();
    remaining_ = D;
    std::fill(errors_.begin(), errors_.end(), nullptr);
    ++generation_;
  }
  cv_.notify_all();
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return remaining_ == 0; });
  }
  const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  // Collect events in device order (each device's list is in time order).
  for (auto& w : workers_) {
    trace_.events.insert(trace_.events.end(), w->events.begin(), w->events.end());
    trace_.memory.insert(trace_.memory.end(), w->memory.begin(), w->memory.end());
    w->events.clear();
    w->memory.clear();
  }
  ++iterations_;
  // Report the root cause: a compute error before a stall, a stall before the cancellations.
  std::exception_ptr compute_error;
  bool stalled = false, any_error = false;
  for (auto& e : errors_) {
    if (!e) continue;
    any_error = true;
    try {
      std::rethrow_exception(e);
    } catch (const TransportCancelled&) {
    } catch (const PipelineStall&) { stalled = true; } catch (...) {
      if (!compute_error) compute_error = e;
    }
  }
  if (any_error) transport_.reset();
  if (compute_error) std::rethrow_exception(compute_error);
  if (stalled) {
    std::string msg = "pipeline stalled after " + std::to_string(options_.timeout.count()) + " ms:";
    for (int d = 0; d < D; ++d) msg += " device " + std::to_string(d) + " " + workers_[d]->status() + ";";
    msg.pop_back();
    throw PipelineStall(msg);
  }
  PW_CHECK(!any_error, "a worker was cancelled without a root cause");
  return wall;
}

}  // namespace pw::exec
