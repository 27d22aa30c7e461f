#include "exec/runtime/run_ranks.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "exec/runtime/fault_injection.h"
#include "exec/runtime/rank_runtime.h"
#include "exec/runtime/run_setup.h"
#include "models/error.h"

namespace pw::exec {

namespace {

using Clock = Transport::Clock;

// Deadline of the input agreement (every rank builds its model first).
constexpr std::chrono::minutes kAgreeTimeout{10};

class Bytes {
 public:
  void i64(int64_t v) { raw(&v, sizeof v); }
  void raw(const void* p, size_t n) { s_.append(static_cast<const char*>(p), n); }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  int64_t i64() {
    int64_t v;
    raw(&v, sizeof v);
    return v;
  }
  void raw(void* p, size_t n) {
    PW_CHECK(at_ + n <= s_.size(), "gathered weights are truncated");
    std::memcpy(p, s_.data() + at_, n);
    at_ += n;
  }
  bool done() const { return at_ == s_.size(); }

 private:
  const std::string& s_;
  size_t at_ = 0;
};

std::string encode_stages(LayerStageCompute& compute, const planner::Schedule& sch, int rank) {
  Bytes b;
  for (int s = 0; s < compute.num_stages(); ++s) {
    if (sch.stage_device[s] != rank) continue;
    const StageState st = compute.checkpoint_state(s);
    b.i64(s);
    b.i64(static_cast<int64_t>(st.tensors.size()));
    for (const auto& [name, t] : st.tensors) {
      b.i64(static_cast<int64_t>(name.size()));
      b.raw(name.data(), name.size());
      b.i64(static_cast<int64_t>(t->shape().size()));
      for (int64_t d : t->shape()) b.i64(d);
      b.raw(t->data(), static_cast<size_t>(t->bytes()));
    }
  }
  return b.take();
}

void decode_stages(const std::string& bytes, std::vector<NamedTensors>* out) {
  Reader r(bytes);
  while (!r.done()) {
    const int64_t s = r.i64(), n = r.i64();
    NamedTensors& v = out->at(static_cast<size_t>(s));
    for (int64_t k = 0; k < n; ++k) {
      std::string name(static_cast<size_t>(r.i64()), '\0');
      r.raw(name.data(), name.size());
      std::vector<int64_t> shape(static_cast<size_t>(r.i64()));
      for (int64_t& d : shape) d = r.i64();
      Tensor t(shape);
      r.raw(t.data(), static_cast<size_t>(t.bytes()));
      v.emplace_back(std::move(name), std::move(t));
    }
  }
}

// Prints the line; the failed rank waits (at most 5 s) until every other rank has printed
// its own, then ends the job.
[[noreturn]] void end_job(mpi::World& world, const std::string& line, bool own) {
  std::fprintf(stderr, "pipewright: %s\n", line.c_str());
  std::fflush(stderr);
  if (own) {
    world.await_acknowledgements(std::chrono::seconds(5));
  } else {
    world.acknowledge_failure();
    // The failed rank aborts the job once all have acknowledged; abort here only if it is gone.
    std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  world.abort(1);
}

// Every rank that hit a NaN or Inf told the others (RankRuntime); the notices of faults hit in
// the same step arrive within kSettle, and the job reports the lowest such rank's fault.
constexpr std::chrono::milliseconds kSettle{500};

[[noreturn]] void settle_numerical(mpi::World& world, int own_rank, const std::string& own_text) {
  int best = own_rank;
  std::string text = own_text;
  const std::string prefix = kNumericalNotice;
  for (const auto& [r, t] : world.collect_notices(kSettle)) {
    if (t.rfind(prefix, 0) != 0) continue;
    if (best < 0 || r < best) {
      best = r;
      text = t.substr(prefix.size());
    }
  }
  throw RankNumericalFault(best, text);
}

// PW_ALLREDUCE=overlapped|blocking (benchmarks): how replicated stages run their all-reduce.
bool overlap_allreduce_from_env() {
  const char* v = std::getenv("PW_ALLREDUCE");
  if (!v || !*v || std::string(v) == "overlapped") return true;
  if (std::string(v) == "blocking") return false;
  throw InputError(std::string("PW_ALLREDUCE: expected overlapped or blocking, got \"") + v + "\"");
}

// PW_ALLREDUCE_BUCKET_BYTES=<bytes> (benchmarks): the overlapped all-reduce's bucket size; 0 =
// one bucket, started at the end of the backward. Unset: RuntimeOptions' default.
int64_t bucket_bytes_from_env(int64_t fallback) {
  const char* v = std::getenv("PW_ALLREDUCE_BUCKET_BYTES");
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n < 0)
    throw InputError(std::string("PW_ALLREDUCE_BUCKET_BYTES: expected a byte count >= 0, got \"") + v + "\"");
  return n;
}

}  // namespace

void agree_on_input(mpi::World& world, const std::function<void()>& checks) {
  std::string msg;
  bool failed = false;
  try {
    checks();
  } catch (const InputError& e) {
    failed = true;
    msg = e.what();
  }
  const int first = world.first_failed(failed, Clock::now() + kAgreeTimeout, "agreeing on the input checks");
  if (first < 0) return;
  throw RankInputError(failed ? msg : "rank " + std::to_string(first) + " rejected the input", first);
}

PipelineRunResult run_pipeline_ranks(const models::Model& model, const planner::Plan& given,
                                     const PipelineRunOptions& options, mpi::World& world,
                                     const std::function<void(const StepReport&)>& on_step) {
  const planner::Plan plan = plan_for_run(given);
  std::unique_ptr<RunSetup> setup;
  FaultSpec fault;
  bool overlap = true;
  int64_t bucket_bytes = RuntimeOptions{}.allreduce_bucket_bytes;
  agree_on_input(world, [&] {
    check_plan_for_model(plan, model, options.schedule ? &*options.schedule : nullptr);
    const int devices = schedule_for_run(plan, options).num_devices;
    if (world.size() != devices)
      throw InputError("mpirun started " + std::to_string(world.size()) + " ranks but the plan has " +
                       std::to_string(devices) + " pipeline devices (one rank per device: mpirun -np " +
                       std::to_string(devices) + ")");
    if (!options.checkpoint_dir.empty() || !options.resume_dir.empty())
      throw InputError(std::string(options.resume_dir.empty() ? "--checkpoint" : "--resume") +
                       ": not supported under mpirun yet");
    fault = parse_fault_spec(options.inject_fault, "PW_TEST_INJECT_FAULT");
    overlap = overlap_allreduce_from_env();
    bucket_bytes = bucket_bytes_from_env(bucket_bytes);
    setup = std::make_unique<RunSetup>(make_run_setup(model, plan, options));
    if (setup->compute->splits_tied_table())
      throw InputError("tied embeddings split across stages are not supported under mpirun yet "
                       "(the table's two gradients are summed in one process)");
  });
  const int rank = world.rank();
  LayerStageCompute& compute = *setup->compute;
  std::unique_ptr<FaultInjectingCompute> injected;
  StageCompute* comp = &compute;
  if (fault.rank >= 0) {
    injected = std::make_unique<FaultInjectingCompute>(compute, fault, rank);
    comp = injected.get();
  }
  RuntimeOptions ro;
  ro.vertical_sync = options.vertical_sync;
  ro.overlap_allreduce = overlap;
  ro.allreduce_bucket_bytes = bucket_bytes;
  ro.threads_per_worker = options.threads_per_worker;
  ro.timeout = options.timeout;
  const int loss_stage = compute.loss_stage();
  // Each replica of the loss stage holds the loss of its micro-batches: slot i of the agreed
  // vector carries replica i's share (-inf elsewhere), and the shares add up to the loss.
  const int loss_replicas = loss_stage >= 0 ? setup->schedule.replicas(loss_stage) : 1;
  int loss_slot = -1;
  for (int i = 0; i < loss_replicas && loss_stage >= 0; ++i)
    if (setup->schedule.device_of(loss_stage, i) == rank) loss_slot = i;
  const int total = options.warmup_steps + options.steps;
  const int S = compute.num_stages();
  PipelineRunResult r;
  r.transport_spin_ns = ro.spin.count();
  std::unique_ptr<RankRuntime> rt;
  try {
    rt = std::make_unique<RankRuntime>(setup->schedule, *comp, world, ro);
    if (rank == 0 && options.on_start) options.on_start();
    EndToEndClock clock(*setup->slicer, options.warmup_steps);
    for (int i = 0; i < total; ++i) {
      clock.step_begins(i);
      setup->slicer->prepare(i);  // the data loader is not part of the timed pipeline iteration
      const int64_t ns = rt->run_iteration();
      const bool stop = options.stop_requested && options.stop_requested();
      std::vector<double> local(2 + static_cast<size_t>(loss_replicas), -std::numeric_limits<double>::infinity());
      local[0] = static_cast<double>(ns);
      local[1] = stop ? 1.0 : 0.0;
      if (loss_slot >= 0)
        local[2 + loss_slot] = loss_replicas == 1 ? compute.loss(i) : compute.loss_share(i, loss_slot, loss_replicas);
      std::vector<double> agreed = world.allreduce_max(local, rt->deadline(), "the end of step " + std::to_string(i + 1));
      double loss = 0;
      for (int k = 0; k < loss_replicas; ++k) loss += agreed[2 + k];
      agreed = {agreed[0], loss, agreed[1]};
      ++r.iterations_run;
      if (i >= options.warmup_steps) {
        const int64_t step_ns = static_cast<int64_t>(agreed[0]);
        r.iteration_ns.push_back(step_ns);
        r.losses.push_back(agreed[1]);
        if (rank == 0 && on_step)
          on_step({i + 1 - options.warmup_steps, options.steps, agreed[1], step_ns,
                   static_cast<double>(plan.batch) * 1e9 / std::max<int64_t>(1, step_ns)});
      }
      clock.step_ends(i);
      if (agreed[2] > 0) {
        r.stopped = true;
        break;
      }
    }
    clock.fill(r, plan.batch);
    r.trace = rt->gather_trace();
    std::vector<double> act(S, 0.0);
    for (int s = 0; s < S; ++s)
      if (setup->schedule.stage_device[s] == rank) act[s] = static_cast<double>(compute.peak_activation_bytes(s));
    for (double a : world.allreduce_max(act, rt->deadline(), "gathering peak activations"))
      r.peak_activation_bytes.push_back(static_cast<int64_t>(a));
    const auto places =
        world.gather(world.host() + ": " + rt->placement().to_string(), rt->deadline(), "gathering placements");
    const auto warnings = world.gather(rt->warning(), rt->deadline(), "gathering warnings");
    std::vector<std::string> stage_bytes;
    if (options.keep_final_weights)
      stage_bytes = world.gather(encode_stages(compute, setup->schedule, rank), rt->deadline(), "gathering weights");
    if (rank == 0) {
      r.placement = places;
      for (const std::string& w : warnings)
        if (!w.empty() && r.warning.find(w) == std::string::npos) r.warning += (r.warning.empty() ? "" : "; ") + w;
      r.peak_memory_bytes.assign(setup->devices, 0);
      for (const auto& m : r.trace.memory)
        r.peak_memory_bytes[m.device] = std::max(r.peak_memory_bytes[m.device], m.bytes);
      if (options.keep_final_weights) {
        r.final_weights.resize(S);
        for (const std::string& b : stage_bytes) decode_stages(b, &r.final_weights);
      }
    }
  } catch (const RankNumericalFault& e) {
    settle_numerical(world, e.rank(), e.what());
  } catch (const RankFailure& e) {
    end_job(world, e.what(), true);
  } catch (const mpi::PeerFailed& e) {
    if (std::string(e.what()).rfind(kNumericalNotice, 0) == 0) settle_numerical(world, -1, "");
    end_job(world, "rank " + std::to_string(rank) + " stopping: " + e.what(), false);
  } catch (const std::exception& e) {
    const std::string text = "rank " + std::to_string(rank) + " failed: " + e.what();
    world.notify_failure(text);
    end_job(world, text, true);
  }
  const int64_t med = median_ns(r.iteration_ns);
  r.median_iteration_ms = static_cast<double>(med) / 1e6;
  r.samples_per_s = static_cast<double>(plan.batch) * 1e9 / std::max<int64_t>(1, med);
  return r;
}

}  // namespace pw::exec
