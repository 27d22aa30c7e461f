#include "exec/runtime/run_pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <set>

#include "exec/layers/network.h"
#include "exec/machine/machine_load.h"
#include "exec/machine/pinning.h"
#include "exec/numerics.h"
#include "exec/runtime/checkpoint.h"
#include "exec/runtime/run_checkpoint.h"
#include "exec/runtime/run_compute.h"
#include "exec/runtime/run_imported.h"
#include "exec/runtime/run_setup.h"
#include "exec/runtime/trainer.h"
#include "models/error.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_replicas.h"

namespace pw::exec {

void check_plan_for_model(const planner::Plan& plan, const models::Model& model, const planner::Schedule* schedule) {
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
    if (st.replicas() < 1) throw InputError(at + "/devices: expected at least one device");
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
    throw InputError("plan: " + std::to_string(S) +
                     " stages are not a multiple of chunks = " + std::to_string(plan.chunks));
  bool replicated = false;
  int replica_devices = 0;
  for (const auto& st : plan.stages) {
    replicated = replicated || st.replicas() > 1;
    replica_devices += st.replicas();
  }
  if (replicated) {
    if (plan.chunks != 1)
      throw InputError("plan: replicated stages need chunks = 1, got " + std::to_string(plan.chunks));
    if (plan.schedule != planner::ScheduleKind::gpipe && plan.schedule != planner::ScheduleKind::one_f_one_b &&
        plan.schedule != planner::ScheduleKind::pipedream_async)
      throw InputError("plan: replicated stages run with gpipe, 1f1b or pipedream-async, not " +
                       std::string(planner::to_string(plan.schedule)));
  }
  if (schedule) {
    check_imported_schedule(plan, *schedule);
    return;
  }
  try {
    schedule_for_run(plan);
  } catch (const InputError& e) {
    throw InputError("plan: schedule " + std::string(planner::to_string(plan.schedule)) + " with " +
                     std::to_string(replicated ? replica_devices : S / plan.chunks) + " devices and " +
                     std::to_string(plan.num_micro_batches) + " micro-batches: " + e.what());
  }
}

planner::Plan plan_for_run(const planner::Plan& plan) {
  if (planner::is_synchronous(plan.schedule)) return plan;
  int64_t period = 1;
  for (const auto& st : plan.stages) period = std::lcm(period, static_cast<int64_t>(std::max(1, st.replicas())));
  if (period == 1 || plan.num_micro_batches < 1 || plan.num_micro_batches % period == 0) return plan;
  planner::Plan p = plan;
  const int64_t m = std::lcm(static_cast<int64_t>(plan.num_micro_batches), period);
  if (m > (1 << 20)) return plan;  // check_plan_for_model refuses it
  p.num_micro_batches = static_cast<int>(m);
  p.batch = p.micro_batch_size * p.num_micro_batches;
  return p;
}

planner::Schedule schedule_for_run(const planner::Plan& plan) {
  std::vector<int> replicas;
  bool replicated = false;
  for (const auto& st : plan.stages) {
    replicas.push_back(st.replicas());
    replicated = replicated || st.replicas() > 1;
  }
  if (!replicated)
    return planner::make_schedule(plan.schedule, plan.num_stages() / plan.chunks, plan.num_micro_batches, plan.chunks);
  return planner::make_replicated_schedule(plan.schedule, replicas, plan.num_micro_batches,
                                           std::vector<bool>(replicas.size(), true));
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

namespace {

// Pins the loader's producer where loader_device says (nothing when the workers are not pinned).
void pin_loader(BatchSlicer& slicer, const planner::Schedule& schedule, const std::vector<CoreSet>& placement) {
  std::set<int> used;
  for (const CoreSet& c : placement) used.insert(c.cores.begin(), c.cores.end());
  if (used.empty()) return;
  const Machine& m = Machine::instance();
  const int dev = loader_device(schedule, static_cast<int>(used.size()), m.num_cores());
  CoreSet where;
  if (dev >= 0) {
    where = placement.at(dev);
  } else {
    for (int c = 0; c < m.num_cores(); ++c)
      if (!used.count(c)) where.cores.push_back(c);
  }
  slicer.bind_loader([where] { Machine::instance().bind_current_thread(where); });
}

}  // namespace

int loader_device(const planner::Schedule& schedule, int cores_used, int cores) {
  if (cores_used < cores) return -1;
  return schedule.device_of(schedule.num_stages - 1, 0);
}

int loader_device(const planner::Schedule& schedule, const std::vector<CoreSet>& placement, int cores) {
  std::set<int> used;
  for (const CoreSet& c : placement) used.insert(c.cores.begin(), c.cores.end());
  return loader_device(schedule, static_cast<int>(used.size()), cores);
}

PipelineRunResult run_pipeline(const models::Model& model, const planner::Plan& given,
                               const PipelineRunOptions& options,
                               const std::function<void(const StepReport&)>& on_step) {
  const planner::Plan plan = plan_for_run(given);
  // Who draws the mini-batches: on cores no worker uses, the background loader, `prefetch`
  // ahead. When the workers own every core, the worker loader_device names (the last stage's,
  // idle while the pipeline fills) draws the next iteration's at the start of each iteration,
  // which is what the prediction charges (sim::StageCosts::data_ns). A producer thread on that
  // worker's core instead shared it as the OS scheduler chose: the worker took its first input
  // 1-6 ms late and its ops ran slower while the draw went on (bench/RESULTS.md).
  // Synchronous schedules only: the simulator charges no data phase to the others.
  const auto worker_draws = [&](const planner::Schedule& s) {
    if (!planner::is_synchronous(s.kind)) return -1;
    const Machine& m = Machine::instance();
    return loader_device(s, m.assign(s.num_devices), m.num_cores());
  };
  RunSetup setup = make_run_setup(model, plan, options, worker_draws);
  add_replica_computes(setup, model, plan, options);
  const int devices = setup.devices;
  auto& slicer = setup.slicer;
  LayerStageCompute& compute = *setup.compute;
  planner::Schedule schedule = setup.schedule;  // setup keeps its copy (device_computes, run_loss)
  RuntimeOptions ro;
  ro.vertical_sync = options.vertical_sync;
  ro.threads_per_worker = options.threads_per_worker;
  ro.timeout = options.timeout;
  ro.lanes = setup.lanes;
  ro.spin = transport_spin(devices, Machine::instance().num_cores());  // as the prediction's hand-off
  if (setup.draw_device >= 0)
    ro.at_iteration_start = [slicer = setup.slicer, drawer = setup.draw_device](int device, int iteration) {
      if (device == drawer) slicer->draw_ahead(iteration + 1);
    };

  // Checkpoint identity: what must match for a resume (the MPI ranks write the same).
  const Json identity = run_checkpoint_identity(model, plan, options, *slicer);
  check_run_checkpointing(setup, plan, options);
  const int total = options.warmup_steps + options.steps;
  const int S = compute.num_stages();
  PipelineRunResult r;
  if (!options.resume_dir.empty()) {
    const CheckpointInfo info = open_checkpoint(options.resume_dir, identity, S);
    if (info.step >= total)
      throw InputError("--resume " + options.resume_dir + ": the checkpoint is at step " + std::to_string(info.step) +
                       "; " + std::to_string(total) + " steps (warm-up included) leave nothing to run");
    // Every replica of a stage loads the one saved state (replica 0's, bit-identical to the others').
    for (int s = 0; s < S; ++s)
      for (int i = 0; i < setup.schedule.replicas(s); ++i) {
        LayerStageCompute& c = i == 0 ? compute : *setup.replica_computes.at(static_cast<size_t>(i - 1));
        HostStagedState st(c.checkpoint_state(s));
        load_stage(options.resume_dir, info, s, st.host());
        st.upload();
        c.restore_counters(s, st.host());
      }
    slicer->restore(info.data);
    r.first_step = static_cast<int>(info.step);
  }
  auto save = [&](int done) {
    std::vector<HostStagedState> staged;
    std::vector<StageState> states;
    staged.reserve(static_cast<size_t>(S));
    for (int s = 0; s < S; ++s) {
      staged.emplace_back(compute.checkpoint_state(s));
      staged.back().download();
      states.push_back(staged.back().host());
    }
    save_checkpoint(options.checkpoint_dir, identity, done, slicer->state(), states);
    r.checkpoint_step = done;
  };

  PipelineRuntime rt(std::move(schedule), device_computes(setup), ro);
  r.warning = rt.warning();
  r.transport_spin_ns = ro.spin.count();
  if (setup.draw_device < 0) pin_loader(*slicer, setup.schedule, rt.placement());
  for (const auto& c : rt.placement()) r.placement.push_back(c.to_string());
  for (const Device& d : setup.lanes) r.lanes.push_back(d.to_string());
  if (options.on_start) options.on_start();
  CopyThreads workers;
  workers.workers = devices;
  workers.run = [&rt](const std::function<void(int)>& body) { rt.run_on_workers(body); };
  EndToEndClock clock(*slicer, options.warmup_steps);
  for (int i = r.first_step; i < total; ++i) {
    const int local = i - r.first_step;  // the runtime counts its own iterations from 0
    clock.step_begins(i);
    slicer->prepare(local);  // the data loader is not part of the timed pipeline iteration
    int64_t ns = 0;
    try {
      ns = rt.run_iteration();
    } catch (const NumericalFault& e) { throw e.shifted(r.first_step); }
    ++r.iterations_run;
    if (i >= options.warmup_steps) {
      r.iteration_ns.push_back(ns);
      r.losses.push_back(run_loss(setup, local));
      if (on_step)
        on_step({i + 1 - options.warmup_steps, options.steps, r.losses.back(), ns,
                 static_cast<double>(plan.batch) * 1e9 / std::max<int64_t>(1, ns)});
    }
    const int done = i + 1;
    const bool stop = options.stop_requested && options.stop_requested();
    if (checkpoint_due(options, done, total, stop)) save(done);
    clock.step_ends(i);
    if (stop) {
      r.stopped = true;
      break;
    }
    if (options.between_steps && done < total) {
      const auto a = std::chrono::steady_clock::now();
      options.between_steps(done, workers);
      clock.paused(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - a).count());
    }
  }
  clock.fill(r, plan.batch);
  const int64_t med = median_ns(r.iteration_ns);
  r.median_iteration_ms = static_cast<double>(med) / 1e6;
  r.samples_per_s = static_cast<double>(plan.batch) * 1e9 / std::max<int64_t>(1, med);
  r.trace = rt.trace();
  r.peak_memory_bytes.assign(devices, 0);
  for (const auto& m : r.trace.memory) r.peak_memory_bytes[m.device] = std::max(r.peak_memory_bytes[m.device], m.bytes);
  for (int s = 0; s < compute.num_stages(); ++s) r.peak_activation_bytes.push_back(compute.peak_activation_bytes(s));
  if (options.keep_final_weights) {
    r.final_weights = copy_stage_states(compute);
    for (size_t i = 0; i < setup.replica_computes.size(); ++i) {
      std::vector<NamedTensors> w = copy_stage_states(*setup.replica_computes[i]);
      for (int s = 0; s < S; ++s)
        if (rt.schedule().replicas(s) <= static_cast<int>(i) + 1) w[s].clear();
      r.replica_final_weights.push_back(std::move(w));
    }
  }
  return r;
}

}  // namespace pw::exec
