// `pipewright run`: trains a model as a real pipeline on this machine (exec/run_pipeline.h).
//   pipewright run --plan plan.json [--model M] [--steps N] [--data FILE] [--trace F] [--svg F]
//                  [--compare] [--json]
//   pipewright run --model M --stages S --micro-batches M [--micro-batch-size B]
//                  [--schedule K] [--chunks V] [--recompute] ...   (an even plan built here)
//   pipewright run --model M --schedule-csv F [--micro-batch B] [--recompute] ...
//                  (PyTorch's CSV action format, planner/schedule_csv.h: the CSV's own op order
//                  on an even split of the layers into its stages, each on the rank whose row
//                  holds it; exec/runtime/run_imported.h. Not with --compare or --run-trace.)
// Progress goes to stderr as for `train` (on a terminal rewritten in place; otherwise about every
// 10% once the run has lasted 10 s, or every --log-every N steps); the summary to stdout (text,
// or JSON with --json).
// --checkpoint DIR [--checkpoint-every K] / --resume DIR: exec/checkpoint.h. SIGINT / SIGTERM
// finish the step on every worker, checkpoint, write the trace, SVG and summary of the steps
// done and exit 130 / 143; a NaN or Inf exits 4 (tools/signals.h). Under mpirun the same, on
// every rank, with rank 0 writing the checkpoint; what a signal to mpirun itself does is in
// tools/mpi_stop.h. --step-deadline SECONDS (mpirun only): how long a rank waits for the others
// before the job ends naming the ranks that stopped responding (default: max(10 s, 20 x the
// median step so far), 5 minutes for the first step; exec/runtime/run_ranks.h).
// --compare measures a profile of the model on this machine (exec/profiler.h), simulates the
// same plan with it (sim/) and prints predicted vs measured iteration time and peak memory.
// Under mpirun rank 0 measures and compares after the run (as the threaded run does: the same
// profile measurement, co-run with one copy per rank, and the same simulation), while the other
// ranks wait for it in a sleeping barrier, so they do not compete with the measurement.
// Long runs: --trace and --run-trace keep the last --trace-keep K iterations in full plus one
// summary per iteration (sim/trace_trim.h, sim/run_trace.h; simulate --replay uses the kept
// ones); --trace-all keeps every event. The SVG draws the last steady iterations only
// (sim/timeline_svg.h).
// Data: --prefetch N mini-batches are drawn ahead in the background (exec/data/loader.h) on
// cores no worker uses; when the workers own every core, the last stage's worker draws the next
// one at the start of each iteration instead (exec/runtime/run_pipeline.h). The
// summary gives the median step time and the end-to-end samples/s (data included), with a note
// when waiting for data took more than 10% of the wall time (exec/data/loader.h).
// --device cuda[:N] [--gpus G]: the same pipeline on GPUs (exec/runtime/device_lanes.h): every
// worker on a CUDA stream of its own, the workers split over G GPUs (default 1: S stages are S
// streams of one GPU); op times in the trace come from CUDA events. A build or machine without
// a usable GPU is refused (one line, exit 2). Not with mpirun or replicated stages. With
// --compare the profile is measured on the GPU after the run, and the summary adds each GPU's
// device memory (allocator peak beside the predicted peak) and, when several workers share a
// GPU, a note and a prediction that accounts for the sharing (exec/runtime/device_compare.h).
#ifdef PW_HAVE_EXEC
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include <chrono>

#include "exec/layers/network.h"
#include "exec/machine/memory.h"
#include "exec/machine/pinning.h"
#include "exec/numerics.h"
#include "exec/optimizer.h"
#include "exec/parallel.h"
#include "exec/profile/profiler.h"
#include "exec/runtime/compare_session.h"
#include "exec/runtime/device_lanes.h"
#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_pipeline.h"
#ifdef PW_HAVE_MPI
#include "exec/runtime/fault_injection.h"
#include "exec/runtime/rank_runtime.h"
#include "exec/runtime/run_ranks.h"
#endif
#include "exec/data/data.h"
#include "exec/data/loader.h"
#include "models/defaults.h"
#include "models/error.h"
#include "models/error_text.h"
#include "models/output_set.h"
#include "planner/schedule_csv.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"
#include "sim/report.h"
#include "sim/trace_io.h"
#include "sim/trace_trim.h"
#include "tools/command_registry.h"
#include "tools/flag_checks.h"
#include "tools/model_report.h"
#include "tools/mpi_stop.h"
#include "tools/run_summary.h"
#include "tools/run_world.h"
#include "tools/signals.h"
#include "tools/training_flags.h"
#include "tools/zoo_flags.h"

namespace {

// --trace-keep: iterations a --trace file keeps in full.
constexpr int kDefaultTraceKeep = 20;

struct RunArgs {
  std::string plan, model, trace, svg, schedule = "1f1b";
  std::string run_trace;       // --run-trace: the measured run for `simulate --replay`
  std::string schedule_csv;    // --schedule-csv: run a schedule imported from PyTorch's CSV format
  std::string device = "cpu";  // --device: cpu | cuda | cuda:N
  int gpus = 1;                // --gpus: GPUs the workers are split over (with --device cuda)
  pw::models::ZooOptions zoo;
  pw::tools::TrainingFlags t = [] {
    pw::tools::TrainingFlags f;
    f.steps = 10;
    return f;
  }();
  int stages = 0, micro_batches = 0, chunks = 0;
  int trace_keep = kDefaultTraceKeep;
  bool trace_all = false;
  int warmup_steps = -1;       // -1: 10 with --compare (timings are compared), else 0
  double step_deadline_s = 0;  // --step-deadline: 0 = derived from the measured steps
  int64_t micro_batch_size = 0;
  bool recompute = false, compare = false, vertical_sync = false;
};

using pw::tools::launched_by_mpirun;
using pw::tools::run_on_ranks;
using pw::tools::wait_for_rank0_outputs;
using pw::tools::World;

// Rank 0 of an MPI job that mpirun is tearing down (tools/mpi_stop.h): leave without
// MPI_Finalize once the outputs are out.
bool g_launcher_teardown = false;

// The files a run writes (--trace, --svg, --run-trace), registered and checked before anything
// runs; written at the end and renamed into place together (models/output_set.h).
void add_outputs(pw::OutputSet& outputs, const RunArgs& a) {
  outputs.add("--trace", a.trace);
  outputs.add("--svg", a.svg);
  outputs.add("--run-trace", a.run_trace);
}

// Everything a run needs, built and checked before anything runs.
struct Prepared {
  pw::planner::Plan plan;
  pw::tools::ModelSource src;
  pw::exec::PipelineRunOptions o;
};

// --schedule-csv: the flags it replaces or cannot honour, checked before anything is read.
void check_imported_flags(const RunArgs& a, const CLI::App& sub) {
  for (const char* f : {"--plan", "--stages", "--micro-batches", "--schedule", "--chunks"})
    if (sub.count(f) > 0)
      throw pw::InputError(std::string("--schedule-csv: the CSV gives the stages, micro-batches and schedule; drop ") +
                           f);
  if (a.model.empty()) throw pw::InputError("--schedule-csv: needs --model (the model the schedule runs)");
  if (a.compare)
    throw pw::InputError(
        "--compare: not supported with --schedule-csv (price the CSV with `pipewright schedule import " +
        a.schedule_csv + " --plan P`)");
  if (!a.run_trace.empty())
    throw pw::InputError("--run-trace: not supported with --schedule-csv (replay rebuilds the schedule from its kind)");
}

// --device and --gpus: a device this build and machine can use, and what it cannot run yet.
void check_device_flags(const RunArgs& a, const CLI::App& sub) {
  const pw::exec::Device d = pw::exec::parse_device_flag(a.device, "--device");
  if (d.is_cpu()) {
    if (sub.count("--gpus") > 0) throw pw::InputError("--gpus: applies with --device cuda only");
    return;
  }
  if (a.gpus < 1) throw pw::InputError("--gpus: expected >= 1, got " + std::to_string(a.gpus));
  pw::exec::check_device_usable(d, "--device");
}

// The flags that pick the run's form (plan, quick, CSV) and the trace's, checked first.
void check_run_flags(const RunArgs& a, const CLI::App& sub, const World* world) {
  const bool imported = !a.schedule_csv.empty();
  if (imported) check_imported_flags(a, sub);
  const bool quick = !sub.get_option("--stages")->empty();
  if (a.plan.empty() && !quick && !imported)
    throw pw::InputError(
        "run: expected --plan FILE, --model M --stages S --micro-batches M, or --model M --schedule-csv F");
  if (!a.plan.empty() && quick) throw pw::InputError("--stages: give either --plan or the quick form, not both");
  if (quick && a.model.empty()) throw pw::InputError("--stages: the quick form needs --model");
  pw::tools::check_training_flags(a.t, sub, !world || world->rank() == 0);  // rank 0 writes checkpoints
  if (a.t.steps > std::numeric_limits<int>::max())
    throw pw::InputError("--steps: expected at most " + std::to_string(std::numeric_limits<int>::max()) + ", got " +
                         std::to_string(a.t.steps));
  if (a.t.checkpoint_every > std::numeric_limits<int>::max())
    throw pw::InputError("--checkpoint-every: expected at most " + std::to_string(std::numeric_limits<int>::max()));
  if (a.trace_keep < 1) throw pw::InputError("--trace-keep: expected >= 1, got " + std::to_string(a.trace_keep));
  if (sub.count("--step-deadline") > 0 && !(a.step_deadline_s >= 0.001 && a.step_deadline_s <= 86400))
    throw pw::InputError("--step-deadline: expected seconds from 0.001 to 86400, got " +
                         std::to_string(a.step_deadline_s));
  if (a.trace_all && sub.count("--trace-keep") > 0)
    throw pw::InputError("--trace-all: give either --trace-all or --trace-keep K, not both");
  check_device_flags(a, sub);
}

// The model: --model, the plan's embedded model, or the zoo / default model the plan names.
pw::tools::ModelSource resolve_run_model(const RunArgs& a, const CLI::App& sub, const pw::planner::Plan& plan) {
  // A plan names its model; the built-in default model is found by that name, others need --model.
  std::string model_spec = !a.model.empty() ? a.model : plan.model;
  if (a.model.empty() && plan.model == pw::models::default_model().name()) model_spec = "default";
  pw::models::ZooOptions z = a.zoo;
  if (pw::tools::is_zoo_name(model_spec) && model_spec != "default") {
    pw::tools::check_size_flags_for_family(model_spec, sub);
    z = pw::tools::with_unset_sizes_from(z, pw::tools::small_zoo_options(), sub);
    z.batch = pw::tools::small_zoo_batch(model_spec);
  }
  // A plan made from a model carries it (planner::Plan::inputs): that model, not a zoo default.
  const bool embedded = a.model.empty() && !plan.inputs.model.is_null();
  if (embedded && pw::tools::first_size_flag_given(sub) != nullptr)
    throw pw::InputError(std::string(pw::tools::first_size_flag_given(sub)) + ": " + a.plan +
                         " carries its model; drop the sizes");
  return embedded ? pw::tools::model_from_document(plan.inputs.model, a.plan + ": /inputs/model")
                  : pw::tools::resolve_model(model_spec, z, a.model.empty() ? a.plan + ": /model" : "--model");
}

// The quick form's even plan.
pw::planner::Plan quick_plan(const RunArgs& a, const pw::models::Model& model) {
  if (a.stages < 1) throw pw::InputError("--stages: expected >= 1, got " + std::to_string(a.stages));
  if (a.micro_batches < 1) throw pw::InputError("--micro-batches: expected >= 1");
  const auto kind = pw::planner::parse_schedule_kind(a.schedule, "--schedule");
  const int chunks = a.chunks > 0 ? a.chunks : (kind == pw::planner::ScheduleKind::interleaved_1f1b ? 2 : 1);
  const int64_t mbs =
      a.micro_batch_size > 0 ? a.micro_batch_size : std::max<int64_t>(1, model.batch() / a.micro_batches);
  pw::planner::Plan plan = pw::exec::even_plan(model, a.stages, a.micro_batches, mbs, kind, a.recompute, chunks);
  try {
    pw::planner::make_schedule(kind, a.stages, a.micro_batches, chunks);
  } catch (const pw::InputError& e) { throw pw::InputError(std::string("--schedule: ") + e.what()); }
  return plan;
}

// --schedule-csv: the schedule read and checked, and the even plan it runs on.
pw::planner::Schedule imported_plan(const RunArgs& a, const pw::models::Model& model, pw::planner::Plan& plan) {
  pw::planner::Schedule sched = pw::planner::load_schedule_csv(a.schedule_csv);
  try {
    pw::planner::validate_schedule(sched);
  } catch (const pw::InputError& e) { throw pw::InputError(a.schedule_csv + ": " + e.what()); }
  const int64_t mbs =
      a.micro_batch_size > 0 ? a.micro_batch_size : std::max<int64_t>(1, model.batch() / sched.num_micro_batches);
  plan = pw::exec::even_plan_for_schedule(model, sched, mbs, a.recompute, a.schedule_csv);
  return sched;
}

// What replicated stages cannot do yet.
void check_replicated(const RunArgs& a, const pw::planner::Plan& plan) {
  const bool replicated =
      std::any_of(plan.stages.begin(), plan.stages.end(), [](auto& st) { return st.replicas() > 1; });
  if (!replicated) return;
  if (a.compare) throw pw::InputError("--compare: not supported with replicated stages yet");
  if (a.vertical_sync) throw pw::InputError("--vertical-sync: not supported with replicated stages yet");
}

pw::exec::PipelineRunOptions run_options(const RunArgs& a, const pw::planner::Plan& plan) {
  pw::exec::PipelineRunOptions o;
  o.steps = static_cast<int>(a.t.steps);
  o.warmup_steps = a.warmup_steps >= 0 ? a.warmup_steps : (a.compare ? 10 : 0);
  o.data_file = a.t.data;
  o.prefetch = a.t.prefetch;
  o.seed = a.t.seed;
  o.optimizer = pw::tools::training_optimizer(a.t);
  o.vertical_sync = a.vertical_sync;
  if (a.vertical_sync && pw::planner::is_synchronous(plan.schedule))
    throw pw::InputError("--vertical-sync: applies to pipedream-async / 2bw only");
  o.threads_per_worker = a.t.threads;
  // A plan made for this machine says how many cores each stage owns.
  if (a.t.threads == 0 && plan.threads_per_stage > 0) {
    pw::tools::check_thread_count(plan.threads_per_stage, a.plan + ": /threads_per_stage");
    o.threads_per_worker = plan.threads_per_stage;
  }
  o.checkpoint_dir = a.t.checkpoint;
  o.checkpoint_every = static_cast<int>(a.t.checkpoint_every);
  o.resume_dir = a.t.resume;
  o.stop_requested = [] { return pw::tools::StopSignals::stop_requested(); };
  o.stop_signal = [] { return pw::tools::StopSignals::received(); };
  o.stop_from_launcher = [] { return pw::tools::StopSignals::from_parent(); };
  o.step_deadline = std::chrono::milliseconds(static_cast<int64_t>(a.step_deadline_s * 1000));
  o.device = pw::exec::parse_device_flag(a.device, "--device");
  // Under mpirun, plain "cuda" spreads the ranks over the host's GPUs; "cuda:N" pins them all.
  o.device_by_local_rank = a.device == "cuda";
  o.gpus = a.gpus;
  return o;
}

// `world`: this rank's MPI world under mpirun, else null.
Prepared prepare(const RunArgs& a, const CLI::App& sub, World* world) {
  check_run_flags(a, sub, world);
  pw::planner::Plan plan;
  if (!a.plan.empty()) plan = pw::planner::load_plan_file(a.plan);
  const pw::tools::ModelSource src = resolve_run_model(a, sub, plan);
  const pw::models::Model& model = src.model;
  if (!sub.get_option("--stages")->empty()) plan = quick_plan(a, model);
  std::optional<pw::planner::Schedule> imported_schedule;
  if (!a.schedule_csv.empty()) imported_schedule = imported_plan(a, model, plan);
  plan = pw::exec::plan_for_run(plan);  // asynchronous replicas: whole round-robin periods
  pw::exec::check_plan_for_model(plan, model, imported_schedule ? &*imported_schedule : nullptr);
  check_replicated(a, plan);
  pw::exec::PipelineRunOptions o = run_options(a, plan);
  o.schedule = std::move(imported_schedule);

  // Validated before the banner and before anything is allocated (tools/training_flags.h).
  std::optional<pw::tools::RankPlace> rank;
  if (world) rank = pw::tools::rank_place(*world, o);
  pw::tools::check_run_fits_in_memory(model, plan, o.optimizer, o.schedule ? &*o.schedule : nullptr, o.device, o.gpus,
                                      rank ? &*rank : nullptr, "--micro-batch and the model's sizes");
  if (a.compare && o.device.is_cpu() && !launched_by_mpirun())
    pw::tools::check_compare_fits_in_memory(model, plan, o.optimizer, o.threads_per_worker);
  (void)pw::exec::make_data_source(model, o.data_file, o.seed, "--data");
  return Prepared{std::move(plan), src, std::move(o)};
}

// The schedule's devices: every replica of a replicated stage is one.
int device_count(const pw::planner::Plan& plan) {
  int devices = 0;
  for (const auto& st : plan.stages) devices += st.replicas();
  if (plan.chunks > 1) devices = plan.num_stages() / plan.chunks;
  return devices;
}

// The banner goes out with the first progress line (tools/training_flags.h: ProgressLines
// decides which go out): a run that fails before any line (a numerical fault in step 1, a
// signal) prints only its one line.
std::function<void(const pw::exec::StepReport&)> banner_and_progress(Prepared& p, int devices, bool ranks,
                                                                     pw::tools::ProgressLines& lines) {
  const pw::planner::Plan& plan = p.plan;
  const std::string name = p.src.model.name();
  p.o.on_start = [&lines, &plan, name, devices, ranks] {
    char buf[512];
    std::snprintf(
        buf, sizeof buf, "run: %s, %d stages on %d %s, %s, %d micro-batches of %lld%s\n", name.c_str(),
        plan.num_stages(), devices, ranks ? "MPI ranks" : "workers",
        std::string(pw::planner::to_string(plan.schedule)).c_str(), plan.num_micro_batches,
        static_cast<long long>(plan.micro_batch_size),
        std::any_of(plan.stages.begin(), plan.stages.end(), [](auto& s) { return s.recompute; }) ? ", recompute" : "");
    lines.set_banner(buf);
  };
  const auto start = std::chrono::steady_clock::now();
  return [&lines, start](const pw::exec::StepReport& s) {
    char line[160];
    std::snprintf(line, sizeof line, "step %d/%d  loss %.4f  %.1f samples/s  %.2f ms", s.step, s.steps, s.loss,
                  s.samples_per_s, static_cast<double>(s.iteration_ns) / 1e6);
    lines.step(s.step, s.steps, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), line);
  };
}

// The files of the run (temporaries until the OutputSet commits them). The trace holds the
// warm-up steps too (those this call ran).
void write_run_outputs(const RunArgs& a, const Prepared& p, const pw::exec::PipelineRunResult& r,
                       const pw::exec::Prediction* cmp, int devices) {
  const pw::planner::Plan& plan = p.plan;
  const pw::sim::RunInfo info = pw::sim::run_info_for_plan(plan, std::max(1, r.iterations_run));
  const int trace_keep = a.trace_all ? std::numeric_limits<int>::max() : a.trace_keep;
  if (!a.run_trace.empty()) pw::exec::write_run_trace(a.run_trace, plan, r.trace, p.o.warmup_steps, cmp, trace_keep);
  if (cmp && !a.svg.empty())
    pw::exec::write_compare_svg(a.svg, plan, *cmp, r.trace, p.o.warmup_steps, p.src.model.name());
  if (!a.trace.empty())
    pw::write_file_atomic(a.trace, pw::sim::chrome_trace_json(pw::sim::trim_trace(r.trace, trace_keep)).dump() + "\n");
  if (!a.svg.empty() && !cmp)
    pw::sim::write_timeline_files(
        r.trace, pw::sim::summarize(r.trace, info),
        "measured: " + p.src.model.name() + ", " + info.schedule + ", " + std::to_string(devices) + " workers", "",
        a.svg);
}

// Rank 0 (or the threaded run) predicts with --compare. A threaded run keeps a failure (the
// measurement does not fit in memory, say) in `failed` and goes on: its outputs are written
// first, then the failure ends the command. Under mpirun a failure ends the job, since the other
// ranks wait in the compare barrier.
std::optional<pw::exec::Prediction> predict(pw::exec::CompareSession& cmp, World* world, std::exception_ptr& failed) {
  try {
    return cmp.predict();
  } catch (const std::exception& e) {
    if (!world) {
      failed = std::current_exception();
      return std::nullopt;
    }
    std::fprintf(stderr, "pipewright: error: --compare: %s\n", pw::one_line_message(e.what()).c_str());
    std::fflush(stderr);
    world->abort(1);
  }
}

// Rank 0 or the threaded run, last: the files (temporaries), the summary on stdout, then the
// files renamed into place; a stopped run exits as tools/signals.h says.
void finish_run(const RunArgs& a, const Prepared& p, const pw::exec::PipelineRunResult& r,
                const pw::exec::Prediction* c, int devices, bool ranks, pw::OutputSet* outputs) {
  write_run_outputs(a, p, r, c, devices);
  const pw::exec::RunReport report{p.plan,       p.src.model.name(), devices, a.t.steps, p.o.warmup_steps,
                                   p.o.prefetch, a.t.checkpoint,     r,       c};
  if (a.t.json) pw::tools::print_run_json(report);
  else pw::tools::print_run_text(report);
  std::cout.flush();
  std::fflush(stdout);
  if (outputs != nullptr) outputs->commit();
  if (r.stopped)
    pw::tools::exit_stopped(r.first_step + r.iterations_run, p.o.warmup_steps + a.t.steps, a.t.checkpoint,
                            r.checkpoint_step, ranks ? r.stop_signal : 0);
}

// Runs a prepared plan: on threads in this process (world == nullptr), or as one rank of an
// MPI job (exec/runtime/run_ranks.h), where rank 0 alone prints and writes the outputs (into
// `outputs`, which it commits; the other ranks pass nullptr).
void execute(const RunArgs& a, Prepared& p, World* world, pw::OutputSet* outputs) {
  pw::tools::StopSignals signals(world != nullptr);  // mpirun forwards SIGUSR1 / SIGUSR2: stops too
  const int devices = device_count(p.plan);
  pw::tools::ProgressLines lines(a.t.log_every, p.o.steps, isatty(fileno(stderr)) != 0);
  const auto progress = banner_and_progress(p, devices, world != nullptr, lines);
  // --compare (exec/runtime/compare_session.h): profile rounds between the steps when they fit in
  // what this process may hold (a cgroup limit or a ulimit included, exec/machine/memory.h).
  pw::exec::CompareSession measurement(p.src.model, p.plan, p.o, devices, world != nullptr,
                                       [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  if (a.compare) measurement.measure_between_steps(p.o, pw::exec::memory_bound().bytes);
  pw::exec::PipelineRunResult r;
  try {
    r = world ? run_on_ranks(p.src.model, p.plan, p.o, *world, progress)
              : pw::exec::run_pipeline(p.src.model, p.plan, p.o, progress);
  } catch (const pw::exec::NumericalFault& e) {
    lines.finish();
    pw::tools::exit_numerical_fault(e.what(), a.t.checkpoint);
  }
  lines.finish();
  const bool compared = a.compare && !r.stopped;  // a stopped run is not compared
  // --compare under mpirun: the other ranks wait (sleeping) until rank 0 has measured.
  const auto compare_barrier = [&] {
    if (world && compared)
      world->barrier(std::chrono::steady_clock::now() + std::chrono::hours(1),
                     "waiting for rank 0's --compare measurement");
  };
  if (world && world->rank() != 0) {
    compare_barrier();
    if (r.stopped && r.stopped_by_launcher) {
      // Leaving first would make mpirun kill rank 0 before its outputs are out.
      wait_for_rank0_outputs(*world);
      pw::tools::exit_without_finalize(pw::tools::exit_code_for_signal(r.stop_signal));
    }
    if (r.stopped) throw pw::tools::CommandExit(pw::tools::exit_code_for_signal(r.stop_signal), "");
    return;  // rank 0 prints and writes the outputs
  }
  // mpirun tearing the job down no longer forwards rank 0's output (tools/mpi_stop.h).
  if (world && r.stopped_by_launcher) {
    g_launcher_teardown = true;
    pw::tools::write_to_launcher_streams();
  }
  if (!r.warning.empty()) std::fprintf(stderr, "%s\n", r.warning.c_str());
  if (r.data_bound)
    std::fprintf(
        stderr,
        "note: data loading is the bottleneck: the steps waited %.2f s of %.2f s for mini-batches (--prefetch %d)\n",
        r.data_wait_s, r.wall_s, p.o.prefetch);
  std::optional<pw::exec::Prediction> cmp;
  std::exception_ptr not_compared;
  if (compared) cmp = predict(measurement, world, not_compared);
  compare_barrier();

  finish_run(a, p, r, cmp ? &*cmp : nullptr, devices, world != nullptr, outputs);
  if (not_compared) {
    std::fprintf(stderr, "run: done and its outputs written, without the comparison: its measurement failed\n");
    std::rethrow_exception(not_compared);
  }
}

#ifdef PW_HAVE_MPI
// One rank of `mpirun -np N pipewright run ...`: the checks are agreed on by every rank
// (exec/runtime/run_ranks.h), and only the lowest rank that rejected the input prints why;
// every rank exits 2. A NaN or Inf on any rank: every rank exits 4, rank 0 prints the one line
// naming the rank, op, step and stage. PW_TEST_INJECT_FAULT (exec/runtime/fault_injection.h)
// is for the tests.
void run_mpi(const RunArgs& a, const CLI::App& sub) {
  World world;
  pw::tools::install_rank_crash_line(world.rank());  // over Open MPI's handlers, naming the rank
  // The reporting rank writes its line here, while `world` is alive: the other ranks leave
  // only through MPI_Finalize (World's destructor), which waits for every rank, so the line is
  // out before any rank exits non-zero and mpirun aborts the job. Printed by main() after the
  // unwinding instead, it was lost about one run in six (the 3-rank refusal of
  // pw_mpi_cli_replicated under ctest -j2).
  auto exit_after = [&world](int reporter, int code, const std::string& line) {
    if (world.rank() == reporter && !line.empty()) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
    if (g_launcher_teardown) {
      wait_for_rank0_outputs(world);
      pw::tools::exit_without_finalize(code);
    }
    throw pw::tools::CommandExit(code, "");
  };
  std::optional<Prepared> p;
  std::optional<pw::OutputSet> outputs;  // rank 0's
  try {
    pw::exec::agree_on_input(world, [&] {
      if (world.rank() == 0) add_outputs(outputs.emplace(), a);
      p.emplace(prepare(a, sub, &world));
      if (const char* f = std::getenv("PW_TEST_INJECT_FAULT")) p->o.inject_fault = f;
      p->o.pause_at_step = pw::exec::pause_step_from_env("PW_TEST_PAUSE_AT_STEP");
    });
    execute(a, *p, &world, outputs ? &*outputs : nullptr);
  } catch (const pw::exec::RankInputError& e) {
    // Another rank failed otherwise and exits with its own code (out of memory: 3): wait for
    // mpirun to end the job on it, so that the job's code is that one, not this rank's 2.
    if (!e.all_on_input()) wait_for_rank0_outputs(world);
    exit_after(e.first_failed_rank(), 2,
               "pipewright: error: " + (world.rank() ? "rank " + std::to_string(world.rank()) + ": " : std::string()) +
                   pw::one_line_message(e.what()));
  } catch (const pw::exec::RankNumericalFault& e) {
    // Every rank has the same text (exec/runtime/run_ranks.h); rank 0 prints it, naming the
    // last good checkpoint as a threaded run does (only rank 0 has the directory).
    exit_after(0, pw::tools::kExitNumericalFault,
               world.rank() == 0 ? pw::tools::numerical_fault_line(e.what(), a.t.checkpoint) : std::string());
  } catch (const pw::exec::RankOutOfMemory& e) {
    // Likewise every rank has the same text; rank 0 prints it as the rank that ran out would.
    std::string line;
    const int code = pw::tools::rank_failure_line(std::make_exception_ptr(pw::OutOfMemory(e.what())), e.rank(), line);
    exit_after(0, code, world.rank() == 0 ? line : std::string());
  } catch (const pw::tools::CommandExit& e) { exit_after(0, e.code(), e.what()); } catch (...) {
    // This rank's own failure outside the run (out of memory building its stages).
    std::string line;
    const int code = pw::tools::rank_failure_line(std::current_exception(), world.rank(), line);
    exit_after(world.rank(), code, line);
  }
}
#endif

void run(const RunArgs& a, const CLI::App& sub) {
  if (sub.count("--step-deadline") > 0 && !launched_by_mpirun())
    throw pw::InputError("--step-deadline: applies to runs under mpirun only");
  if (launched_by_mpirun()) {
#ifdef PW_HAVE_MPI
    run_mpi(a, sub);
    return;
#else
    throw pw::InputError("run: started by mpirun, but this pipewright was built without MPI (-DPW_WITH_MPI=OFF)");
#endif
  }
  pw::OutputSet outputs;
  add_outputs(outputs, a);
  Prepared p = prepare(a, sub, nullptr);
  execute(a, p, nullptr, &outputs);
}

// The pipeline's flags: the plan or the quick form's layout, --schedule-csv.
void add_layout_flags(CLI::App* sub, RunArgs& a) {
  sub->add_option("--plan", a.plan, "plan JSON (pipewright.plan/1)");
  sub->add_option("--model", a.model, "gpt | mlp | default | a model JSON (quick form; with --plan: the plan's model)");
  sub->add_option("--stages", a.stages, "quick form: pipeline stages (an even split of the layers)");
  sub->add_option("--micro-batches", a.micro_batches, "quick form: micro-batches per step");
  sub->add_option("--micro-batch,--micro-batch-size", a.micro_batch_size,
                  "quick form: samples per micro-batch (default batch / M)");
  sub->add_option("--schedule", a.schedule,
                  "quick form: gpipe | 1f1b | zb-h1 | zb-h2 | interleaved-1f1b | pipedream-async | 2bw")
      ->capture_default_str();
  sub->add_option("--chunks", a.chunks, "quick form: model chunks per worker (interleaved; default 2)");
  sub->add_option("--schedule-csv", a.schedule_csv,
                  "run a schedule in PyTorch's CSV action format (row r = rank r; 0F1, 1I1, 1W1, 0B1) on an even "
                  "split of --model's layers");
  sub->add_flag("--recompute", a.recompute, "quick form: re-materialize activations in every stage");
}

// What a run writes and compares: traces, SVG, --compare.
void add_output_flags(CLI::App* sub, RunArgs& a) {
  sub->add_option("--trace", a.trace, "write the measured timeline as Chrome trace-event JSON");
  sub->add_option("--svg", a.svg,
                  "write the measured timeline as SVG (with --compare: predicted and measured side by side)");
  sub->add_option("--trace-keep", a.trace_keep,
                  "--trace and --run-trace keep the last K iterations in full, plus one summary per iteration")
      ->capture_default_str();
  sub->add_flag("--trace-all", a.trace_all, "--trace and --run-trace keep every iteration in full");
  sub->add_option("--run-trace", a.run_trace,
                  "write the measured run (and, with --compare, the prediction) for simulate --replay");
  sub->add_flag("--compare", a.compare, "measure a profile, simulate the plan, print predicted vs measured");
}

pw::tools::CommandRegistrar register_run("run", [](CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand("run", "Train a model as a pipeline on this machine (one pinned worker per stage)");
  add_layout_flags(sub, *a);
  pw::tools::add_zoo_size_options(sub, a->zoo, pw::tools::small_zoo_options());
  pw::tools::add_training_flags(
      sub, a->t,
      {"optimizer steps (mini-batches)", "OpenMP threads per worker (default: its cores)",
       "mini-batches drawn ahead in the background (0: draw before each step; when the workers own every core, the "
       "last stage's worker draws the next one as each step starts)",
       "print a JSON summary", "steps between checkpoints, warm-up steps counted (0: only at the end)",
       "continue from the checkpoint in DIR (same model, plan and options)"});
  sub->add_option("--warmup-steps", a->warmup_steps,
                  "extra steps first, trained but not timed or reported (default: 10 with --compare, else 0)");
  sub->add_option("--step-deadline", a->step_deadline_s,
                  "under mpirun: seconds a rank waits for the others before the job ends naming the ranks that "
                  "stopped responding (default: max(10, 20 x the median step so far); 300 for the first step)");
  sub->add_flag("--vertical-sync", a->vertical_sync, "pipedream-async: PipeDream vertical sync of weight versions");
  sub->add_option("--device", a->device,
                  "where the workers run: cpu | cuda | cuda:N (each worker on a CUDA stream of its own)")
      ->capture_default_str();
  sub->add_option("--gpus", a->gpus, "with --device cuda: GPUs the workers are split over (from cuda:N on)")
      ->capture_default_str();
  add_output_flags(sub, *a);
  sub->callback([a, sub] { run(*a, *sub); });
});

}  // namespace
#endif  // PW_HAVE_EXEC
