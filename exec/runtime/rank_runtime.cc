#include "exec/runtime/rank_runtime.h"

#include <cstring>

#include "exec/backend_errors.h"
#include "exec/numerics.h"
#include "exec/parallel.h"
#include "models/error.h"
#include "planner/schedule_validate.h"

namespace pw::exec {

namespace {

const planner::Schedule& checked(const planner::Schedule& s, const mpi::World& world) {
  planner::validate_schedule(s);
  if (world.size() != s.num_devices)
    throw InputError("mpirun started " + std::to_string(world.size()) + " ranks but the plan has " +
                     std::to_string(s.num_devices) + " pipeline devices (one rank per device: mpirun -np " +
                     std::to_string(s.num_devices) + ")");
  return s;
}

// Events and memory samples as int64 words (10 per event, 3 per sample), for the gather.
std::string encode(const sim::Trace& t) {
  std::vector<int64_t> w{static_cast<int64_t>(t.events.size()), static_cast<int64_t>(t.memory.size())};
  for (const auto& e : t.events)
    w.insert(w.end(), {e.device, static_cast<int64_t>(e.kind), e.stage, e.micro_batch, e.iteration, e.start_ns,
                       e.end_ns, e.bytes, e.is_transfer ? 1 : 0, e.dst_device});
  for (const auto& m : t.memory) w.insert(w.end(), {m.device, m.time_ns, m.bytes});
  return std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(int64_t));
}

void decode_into(const std::string& bytes, sim::Trace* t) {
  std::vector<int64_t> w(bytes.size() / sizeof(int64_t));
  std::memcpy(w.data(), bytes.data(), w.size() * sizeof(int64_t));
  PW_CHECK(w.size() >= 2, "gathered trace is empty");
  const size_t ne = static_cast<size_t>(w[0]), nm = static_cast<size_t>(w[1]);
  PW_CHECK(w.size() == 2 + 10 * ne + 3 * nm, "gathered trace has the wrong size");
  size_t at = 2;
  for (size_t i = 0; i < ne; ++i, at += 10) {
    sim::TraceEvent e;
    e.device = static_cast<int>(w[at]);
    e.kind = static_cast<planner::OpKind>(w[at + 1]);
    e.stage = static_cast<int>(w[at + 2]);
    e.micro_batch = static_cast<int>(w[at + 3]);
    e.iteration = static_cast<int>(w[at + 4]);
    e.start_ns = w[at + 5];
    e.end_ns = w[at + 6];
    e.bytes = w[at + 7];
    e.is_transfer = w[at + 8] != 0;
    e.dst_device = static_cast<int>(w[at + 9]);
    t->events.push_back(e);
  }
  for (size_t i = 0; i < nm; ++i, at += 3) t->memory.push_back({static_cast<int>(w[at]), w[at + 1], w[at + 2]});
}

}  // namespace

RankRuntime::RankRuntime(planner::Schedule schedule, StageCompute& compute, mpi::World& world, RuntimeOptions options)
    : schedule_(std::move(schedule)),
      world_(world),
      options_(std::move(options)),
      timeout_(options_.timeout.count() > 0 ? options_.timeout : kDefaultTimeout),
      transport_(world, checked(schedule_, world).num_stages, schedule_.num_micro_batches, options_.spin,
                 !schedule_.stage_replicas.empty()) {
  if (compute.num_stages() != schedule_.num_stages)
    throw InputError("schedule has " + std::to_string(schedule_.num_stages) +
                     " virtual stages but the model is split into " + std::to_string(compute.num_stages()));
  if (options_.vertical_sync && planner::is_synchronous(schedule_.kind))
    throw InputError("vertical sync applies to asynchronous schedules only, not " +
                     std::string(planner::to_string(schedule_.kind)));
  trace_.source = "measured";
  trace_.num_devices = schedule_.num_devices;
  if (options_.pin_threads) {
    const Machine& m = Machine::instance();
    placement_ = m.assign(world_.local_size())[world_.local_rank()];
    warning_ = oversubscription_warning(world_.local_size(), m.num_cores());
    std::string why;
    if (!placement_.cores.empty() && !m.bind_current_thread(placement_, &why))
      warning_ += (warning_.empty() ? "" : "; ") + std::string("warning: rank ") + std::to_string(world_.rank()) +
                  " not pinned: " + why;
  }
  if (options_.set_thread_count)
    set_num_threads(options_.threads_per_worker > 0 ? options_.threads_per_worker
                                                    : static_cast<int>(std::max<size_t>(1, placement_.cores.size())));
  if (options_.on_worker_start) options_.on_worker_start(world_.rank(), placement_);
  world_.barrier(deadline(), "the start barrier");
  t0_ = Clock::now();
  transport_.set_epoch(t0_);
  worker_ =
      std::make_unique<StageWorker>(worker_config(options_, world_.rank(), &schedule_, &compute, &transport_, t0_));
}

int64_t RankRuntime::run_iteration() {
  const auto start = Clock::now();
  try {
    worker_->run_iteration(iterations_, start + timeout_);
  } catch (const mpi::PeerFailed&) { throw; } catch (const PipelineStall& e) {
    throw mpi::TransportTimeout("rank " + std::to_string(world_.rank()) + ": " + e.what());
  } catch (const NumericalFault& local) {
    const NumericalFault e = local.shifted(first_step_);
    const std::string text = "rank " + std::to_string(world_.rank()) + ", op " +
                             (worker_->current_op().empty() ? std::string("none") : worker_->current_op()) + ": " +
                             e.what();
    world_.notify_failure(kNumericalNotice + text);
    throw RankNumericalFault(world_.rank(), text);
  } catch (const std::exception& e) {
    const std::string op = worker_->current_op().empty() ? "the start" : worker_->current_op();
    if (const std::string oom = out_of_memory_text(e); !oom.empty()) {
      const std::string text = oom + " (at " + op + ", iteration " + std::to_string(iterations_) + ")";
      world_.notify_failure(kOutOfMemoryNotice + text);
      throw RankOutOfMemory(world_.rank(), text);
    }
    const std::string text = "rank " + std::to_string(world_.rank()) + " failed at " + op + " (iteration " +
                             std::to_string(iterations_) + "): " + e.what();
    world_.notify_failure(text);
    throw RankFailure(world_.rank(), text);
  }
  const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  trace_.events.insert(trace_.events.end(), worker_->events.begin(), worker_->events.end());
  trace_.memory.insert(trace_.memory.end(), worker_->memory.begin(), worker_->memory.end());
  worker_->events.clear();
  worker_->memory.clear();
  ++iterations_;
  return wall;
}

sim::Trace RankRuntime::gather_trace() {
  const std::vector<std::string> all = world_.gather(encode(trace_), deadline(), "gathering the traces");
  sim::Trace t;
  t.source = trace_.source;
  t.num_devices = trace_.num_devices;
  for (const std::string& bytes : all) decode_into(bytes, &t);
  return t;
}

}  // namespace pw::exec
