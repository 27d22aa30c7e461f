#include "exec/runtime/run_ranks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <thread>

#include "exec/backend_errors.h"
#include "exec/runtime/checkpoint.h"
#include "exec/runtime/device_lanes.h"
#include "exec/runtime/fault_injection.h"
#include "exec/runtime/rank_checkpoint.h"
#include "exec/runtime/rank_runtime.h"
#include "exec/runtime/run_checkpoint.h"
#include "exec/runtime/run_setup.h"
#include "models/error.h"

namespace pw::exec {

namespace {

using Clock = Transport::Clock;

// Deadline of the input agreement (every rank builds its model first).
constexpr std::chrono::minutes kAgreeTimeout{10};

// The step deadline (PipelineRunOptions::step_deadline): the option when given, else
// max(kMinStepDeadline, kDeadlineMedians x the median step so far), kFirstStepDeadline before
// any step was measured (the first step also builds every oneDNN primitive).
constexpr std::chrono::milliseconds kMinStepDeadline{10000};
constexpr int kDeadlineMedians = 20;
constexpr std::chrono::milliseconds kFirstStepDeadline{5 * 60 * 1000};

std::chrono::milliseconds step_deadline(const PipelineRunOptions& o, const std::vector<int64_t>& steps_ns) {
  if (o.step_deadline.count() > 0) return o.step_deadline;
  if (o.timeout.count() > 0) return o.timeout;
  if (steps_ns.empty()) return kFirstStepDeadline;
  const auto med = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(median_ns(steps_ns)));
  return std::max(kMinStepDeadline, med * kDeadlineMedians);
}

std::string seconds_text(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(d.count()) / 1e3);
  return buf;
}

// A wait passed the step deadline. Every live rank finds out (its own wait times out too, or the
// notice below arrives while it waits) and says so to every other rank with an
// kUnresponsiveNotice; the ranks heard from within the window are alive, the others stopped
// responding (stopped, swapped out, or hung in a system call). The lowest live rank prints the
// one line naming them and ends the job (MPI_Abort: mpirun kills every rank, a stopped one
// included: SIGKILL reaches a stopped process).
constexpr const char* kUnresponsiveNotice = "unresponsive: ";

[[noreturn]] void settle_unresponsive(mpi::World& world, std::chrono::milliseconds deadline, const std::string& own) {
  const int rank = world.rank();
  if (!own.empty()) world.notify_failure(kUnresponsiveNotice + own, std::chrono::milliseconds(200));
  const auto window =
      std::clamp<std::chrono::milliseconds>(deadline / 4, std::chrono::seconds(1), std::chrono::seconds(30));
  std::set<int> alive{rank};
  std::string seen = own;
  const std::string prefix = kUnresponsiveNotice;
  bool answered = !own.empty();
  for (const auto& [r, t] : world.collect_notices(window)) {
    if (t.rfind(prefix, 0) != 0) continue;
    alive.insert(r);
    if (seen.empty()) seen = t.substr(prefix.size());
    if (!answered) {  // told by another rank before this rank's own wait ran out: answer it
      world.notify_failure(kUnresponsiveNotice + ("rank " + std::to_string(rank) + " alive"),
                           std::chrono::milliseconds(200));
      answered = true;
    }
  }
  if (*alive.begin() == rank) {
    std::string gone;
    int count = 0;
    for (int r = 0; r < world.size(); ++r)
      if (!alive.count(r)) gone += (count++ ? ", " : "") + std::to_string(r);
    const std::string line =
        count == 0
            ? "every rank answered but a wait passed the step deadline (" + seconds_text(deadline) + "): " + seen
            : (count == 1 ? "rank " : "ranks ") + gone + " stopped responding: no answer within the step deadline (" +
                  seconds_text(deadline) + ", --step-deadline); " + seen;
    std::fprintf(stderr, "pipewright: %s\n", line.c_str());
    std::fflush(stderr);
    world.abort(1);
  }
  // The lowest live rank ends the job; abort here only if it is gone too.
  std::this_thread::sleep_for(window + std::chrono::seconds(3));
  world.abort(1);
}

// PW_TEST_PAUSE_AT_STEP (tests): every rank waits at the step boundary until a rank has a stop
// request (at most a minute), polling an agreement every 20 ms under the step deadline.
void pause_for_stop(mpi::World& world, RankRuntime& rt, const PipelineRunOptions& o, int step) {
  if (world.rank() == 0) {
    std::fprintf(stderr, "test: paused at step %d\n", step);
    std::fflush(stderr);
  }
  // The minute's end is agreed on in the same reduction: a rank that left the loop on its own
  // clock would meet the others' next pause reduction with its end-of-step one.
  const auto until = Clock::now() + std::chrono::minutes(1);
  while (true) {
    const double stop = o.stop_requested && o.stop_requested() ? 1.0 : 0.0;
    const double over = Clock::now() >= until ? 1.0 : 0.0;
    if (world.allreduce_max({std::max(stop, over)}, rt.deadline(),
                            "the test pause at step " + std::to_string(step))[0] > 0)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
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

// Every rank that hit a fault reported alike (a NaN or Inf, memory running out) told the others
// with the kind's notice (RankRuntime: prefix + text); the notices of faults hit in the same step
// arrive within kSettle, and the job reports the lowest such rank's fault, whatever its kind, so
// that every rank throws the same exception (RankNumericalFault or RankOutOfMemory) with the same
// rank and text and exits with the same code. own_rank -1: this rank only heard of a fault
// (own_notice is what it heard, used when no notice names a rank).
constexpr std::chrono::milliseconds kSettle{500};

bool is_fault_notice(const std::string& t) {
  return t.rfind(kNumericalNotice, 0) == 0 || t.rfind(kOutOfMemoryNotice, 0) == 0;
}

[[noreturn]] void settle_fault(mpi::World& world, int own_rank, const std::string& own_notice) {
  int best = own_rank;
  std::string notice = own_notice;
  for (const auto& [r, t] : world.collect_notices(kSettle)) {
    if (!is_fault_notice(t)) continue;
    if (best < 0 || r < best) {
      best = r;
      notice = t;
    }
  }
  const std::string oom = kOutOfMemoryNotice;
  if (notice.rfind(oom, 0) == 0) throw RankOutOfMemory(best, notice.substr(oom.size()));
  const std::string nan = kNumericalNotice;
  throw RankNumericalFault(best, notice.rfind(nan, 0) == 0 ? notice.substr(nan.size()) : notice);
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

// This rank's pipeline device and the GPU it runs on (device_lanes.h: rank_gpu; the host for a
// run on the host).
RankDevice rank_device(const PipelineRunOptions& o, mpi::World& world) {
  if (o.device.is_cpu()) return {world.rank(), Device::cpu()};
  if (o.gpus != 1)
    throw InputError("--gpus: each MPI rank runs on one GPU (got " + std::to_string(o.gpus) +
                     "); start one rank per pipeline device instead");
  const int count = usable_gpu_count();
  if (count == 0) check_device_usable(o.device, "--device");  // names why no GPU is usable
  return {world.rank(), rank_gpu(o.device, !o.device_by_local_rank, world.local_rank(), count)};
}

}  // namespace

void agree_on_input(mpi::World& world, const std::function<void()>& checks) {
  std::string msg;
  bool failed = false;
  std::exception_ptr other;  // not an input error: this rank rethrows it once the others know
  try {
    checks();
  } catch (const InputError& e) {
    failed = true;
    msg = e.what();
  } catch (const std::exception&) {
    failed = true;
    other = std::current_exception();
  }
  // Agreed: the lowest failed rank, and whether any rank failed otherwise than on its input.
  const int n = world.size();
  const std::vector<double> agreed =
      world.allreduce_max({failed ? -static_cast<double>(world.rank()) : -static_cast<double>(n), other ? 1.0 : 0.0},
                          Clock::now() + kAgreeTimeout, "agreeing on the input checks");
  if (other) std::rethrow_exception(other);
  const int first = static_cast<int>(-agreed[0]);
  if (first >= n) return;
  throw RankInputError(failed ? msg : "rank " + std::to_string(first) + " rejected the input", first, agreed[1] == 0);
}

PipelineRunResult run_pipeline_ranks(const models::Model& model, const planner::Plan& given,
                                     const PipelineRunOptions& options, mpi::World& world,
                                     const std::function<void(const StepReport&)>& on_step) {
  const planner::Plan plan = plan_for_run(given);
  std::unique_ptr<RunSetup> setup;
  FaultSpec fault;
  bool overlap = true;
  int64_t bucket_bytes = RuntimeOptions{}.allreduce_bucket_bytes;
  Json identity;
  int first_step = 0;
  std::optional<CheckpointInfo> resume;  // rank 0: the opened checkpoint; every rank: its step and data
  agree_on_input(world, [&] {
    const RankDevice gpu = rank_device(options, world);
    check_plan_for_model(plan, model, options.schedule ? &*options.schedule : nullptr);
    const int devices = schedule_for_run(plan, options).num_devices;
    if (world.size() != devices)
      throw InputError("mpirun started " + std::to_string(world.size()) + " ranks but the plan has " +
                       std::to_string(devices) + " pipeline devices (one rank per device: mpirun -np " +
                       std::to_string(devices) + ")");
    fault = parse_fault_spec(options.inject_fault, "PW_TEST_INJECT_FAULT");
    overlap = overlap_allreduce_from_env();
    bucket_bytes = bucket_bytes_from_env(bucket_bytes);
    setup = std::make_unique<RunSetup>(make_run_setup(model, plan, options, {}, gpu));
    if (setup->compute->splits_tied_table())
      throw InputError(
          "tied embeddings split across stages are not supported under mpirun yet "
          "(the table's two gradients are summed in one process)");
    identity = run_checkpoint_identity(model, plan, options, *setup->slicer);
    check_run_checkpointing(*setup, plan, options);
    // --resume: rank 0 alone reads the checkpoint (rank_checkpoint.h), here its manifest.
    if (!options.resume_dir.empty() && world.rank() == 0) {
      resume = open_checkpoint(options.resume_dir, identity, setup->compute->num_stages());
      const int all = options.warmup_steps + options.steps;
      if (resume->step >= all)
        throw InputError("--resume " + options.resume_dir + ": the checkpoint is at step " +
                         std::to_string(resume->step) + "; " + std::to_string(all) +
                         " steps (warm-up included) leave nothing to run");
    }
  });
  // Then its stages go to the ranks that run them; a file that fails to load fails a second
  // agreement (every rank took part in the first, so every rank is here to hear of it).
  if (!options.resume_dir.empty()) {
    if (!resume) resume.emplace();
    agree_on_input(world, [&] {
      resume_from_rank0(*setup->compute, setup->schedule, world, options.resume_dir, *resume,
                        Clock::now() + kAgreeTimeout);
      setup->slicer->restore(resume->data);
    });
    first_step = static_cast<int>(resume->step);
  }
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
  ro.lanes = setup->lanes;
  std::vector<int64_t> measured_ns;  // every step's agreed time, warm-up included: the step deadline
  ro.timeout = step_deadline(options, measured_ns);
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
  r.first_step = first_step;
  std::unique_ptr<RankRuntime> rt;
  // Checkpoints as the threaded run writes them (run_checkpoint.h): the ranks send their stages
  // to rank 0 one at a time (stages_to_rank0), which writes each stage's file as it comes, then
  // the manifest (each a temporary renamed into place: one writer keeps the manifest the single
  // commit point). Every rank's data loader is at the same position; rank 0's is saved.
  auto save = [&](int done) {
    std::optional<CheckpointWriter> writer;
    if (rank == 0) writer.emplace(options.checkpoint_dir, done);
    stages_to_rank0(compute, setup->schedule, world, rt->timeout(), "gathering the checkpoint",
                    [&](int s, const StageState& st) {
                      if (s == 0 && options.test_checkpoint_write_delay.count() > 0)
                        std::this_thread::sleep_for(options.test_checkpoint_write_delay);
                      writer->add_stage(st);
                    });
    if (rank == 0) writer->commit(identity, setup->slicer->state());
    // The others wait while rank 0 writes the last stage and the manifest.
    world.barrier(rank0_turn_deadline(rt->timeout()), "writing the checkpoint");
    r.checkpoint_step = done;
  };
  try {
    rt = std::make_unique<RankRuntime>(setup->schedule, *comp, world, ro);
    rt->set_first_step(first_step);
    if (rank == 0 && options.on_start) options.on_start();
    EndToEndClock clock(*setup->slicer, options.warmup_steps);
    for (int i = first_step; i < total; ++i) {
      const int local_it = i - first_step;  // the runtime and the slicer count from 0
      rt->set_timeout(step_deadline(options, measured_ns));
      clock.step_begins(i);
      setup->slicer->prepare(local_it);  // the data loader is not part of the timed pipeline iteration
      const int64_t ns = rt->run_iteration();
      if (options.pause_at_step == i + 1) pause_for_stop(world, *rt, options, i + 1);
      const int sig =
          options.stop_signal ? options.stop_signal() : (options.stop_requested && options.stop_requested() ? 1 : 0);
      std::vector<double> local(3 + static_cast<size_t>(loss_replicas), -std::numeric_limits<double>::infinity());
      local[0] = static_cast<double>(ns);
      local[1] = sig;
      local[2] = sig != 0 && options.stop_from_launcher && options.stop_from_launcher() ? 1.0 : 0.0;
      if (loss_slot >= 0)
        local[3 + loss_slot] =
            loss_replicas == 1 ? compute.loss(local_it) : compute.loss_share(local_it, loss_slot, loss_replicas);
      const std::vector<double> agreed =
          world.allreduce_max(local, rt->deadline(), "the end of step " + std::to_string(i + 1));
      double loss = 0;
      for (int k = 0; k < loss_replicas; ++k) loss += agreed[3 + k];
      const int64_t step_ns = static_cast<int64_t>(agreed[0]);
      measured_ns.push_back(step_ns);
      ++r.iterations_run;
      if (i >= options.warmup_steps) {
        r.iteration_ns.push_back(step_ns);
        r.losses.push_back(loss);
        if (rank == 0 && on_step)
          on_step({i + 1 - options.warmup_steps, options.steps, loss, step_ns,
                   static_cast<double>(plan.batch) * 1e9 / std::max<int64_t>(1, step_ns)});
      }
      const int done = i + 1;
      const bool stop = agreed[1] > 0;
      if (checkpoint_due(options, done, total, stop)) save(done);
      clock.step_ends(i);
      if (stop) {
        r.stopped = true;
        r.stop_signal = static_cast<int>(agreed[1]);
        r.stopped_by_launcher = agreed[2] > 0;
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
    std::vector<std::string> lanes;
    if (!setup->lanes.empty())
      lanes = world.gather(setup->lanes[static_cast<size_t>(rank)].to_string(), rt->deadline(), "gathering lanes");
    if (options.keep_final_weights) {
      r.final_weights.resize(rank == 0 ? S : 0);
      stages_to_rank0(compute, setup->schedule, world, rt->timeout(), "gathering weights",
                      [&](int s, const StageState& st) {
                        for (const auto& [name, t] : st.tensors) r.final_weights[s].emplace_back(name, t->clone());
                      });
    }
    if (rank == 0) {
      r.placement = places;
      r.lanes = lanes;
      for (const std::string& w : warnings)
        if (!w.empty() && r.warning.find(w) == std::string::npos) r.warning += (r.warning.empty() ? "" : "; ") + w;
      r.peak_memory_bytes.assign(setup->devices, 0);
      for (const auto& m : r.trace.memory)
        r.peak_memory_bytes[m.device] = std::max(r.peak_memory_bytes[m.device], m.bytes);
    }
  } catch (const RankNumericalFault& e) {
    settle_fault(world, e.rank(), kNumericalNotice + std::string(e.what()));
  } catch (const RankOutOfMemory& e) {
    settle_fault(world, e.rank(), kOutOfMemoryNotice + std::string(e.what()));
  } catch (const RankFailure& e) { end_job(world, e.what(), true); } catch (const mpi::TransportTimeout& e) {
    settle_unresponsive(world, rt ? rt->timeout() : ro.timeout, e.what());
  } catch (const mpi::PeerFailed& e) {
    const std::string notice = e.what();
    if (is_fault_notice(notice)) settle_fault(world, -1, notice);
    if (notice.rfind(kUnresponsiveNotice, 0) == 0) settle_unresponsive(world, rt ? rt->timeout() : ro.timeout, "");
    end_job(world, "rank " + std::to_string(rank) + " stopping: " + e.what(), false);
  } catch (const std::exception& e) {
    if (const std::string oom = out_of_memory_text(e); !oom.empty()) {  // outside an op: set-up, saving, gathering
      const std::string notice = kOutOfMemoryNotice + oom + " (outside the ops of a step)";
      world.notify_failure(notice);
      settle_fault(world, rank, notice);
    }
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
