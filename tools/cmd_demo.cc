// `pipewright demo`: the main job on the built-in default model (models::default_model()).
// Describe the model and print its analytic profile; then, with the executor: measure a profile
// on this CPU, plan the pipeline on this machine's cores, simulate the plan, train it for a few
// steps as a real pipeline, and set the measured iteration time and memory beside the
// prediction. `--out-dir D` also writes profile.json, plan.json and the predicted and measured
// timelines (Chrome trace JSON and SVG) there.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "models/cluster.h"
#include "models/cost.h"
#include "models/error.h"
#include "models/output_set.h"
#include "planner/planner.h"
#include "sim/plan_prediction.h"
#include "sim/report.h"
#include "sim/trace_io.h"
#include "tools/command_registry.h"
#include "tools/model_report.h"
#ifdef PW_HAVE_EXEC
#include "exec/machine/machine_load.h"
#include "exec/machine/pinning.h"
#include "exec/parallel.h"
#include "exec/profile/profiler.h"
#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_pipeline.h"
#endif

namespace {

struct DemoArgs {
  std::string device = "cpu-core-avx2";
  int64_t micro_batch = 4;
  // The comparison line is the median of these steps' iterations against the prediction. This
  // VM flips between speed states within seconds; a median of 5 steps missed 10% when 3 of them
  // caught a slow state (2 of 27 runs), a median of 10 in none of 27 (bench/RESULTS.md, issue
  // 12). The 5 more steps cost about 0.2 s.
  int steps = 10;
  int stages = 0;  // 0: as many as this machine has cores (at least 2)
  std::string out_dir;
};

std::string out_path(const DemoArgs& a, const std::string& name) {
  return (std::filesystem::path(a.out_dir) / name).string();
}

void describe(const DemoArgs& a, const pw::tools::ModelSource& src) {
  const pw::models::DeviceSpec device = pw::tools::resolve_device(a.device, "--device");
  const pw::models::Profile profile = pw::models::analytic_profile(src.model, device, a.micro_batch);
  std::cout << "== 1. The default model (built in: a byte-level GPT) ==\n";
  pw::tools::print_model_summary(std::cout, src);
  std::cout << "\n";
  pw::tools::print_model_layers(std::cout, src.model);
  std::cout << "\n== 2. Analytic profile on " << device.name << " (roofline at 50% of peak, Adam) ==\n";
  pw::tools::print_profile(std::cout, profile);
}

#ifdef PW_HAVE_EXEC
namespace exec = pw::exec;

pw::models::Profile measure_on_this_cpu(const DemoArgs& a, const pw::models::Model& model, int threads) {
  std::cout << "\n== 3. Measured profile on this CPU (micro-batch " << a.micro_batch << ", " << threads << " thread"
            << (threads > 1 ? "s" : "") << ") ==\n";
  exec::MeasureOptions mo;
  mo.micro_batch = a.micro_batch;
  mo.reps = 7;
  mo.threads = threads;
  mo.optimizer = "sgd-momentum";
  pw::models::Profile measured = exec::measure_profile(model, mo);
  pw::tools::print_profile(std::cout, measured);
  return measured;
}

// The workers are this machine's cores; in-process channels hand buffers over without a copy,
// so a transfer costs about the runtime's per-message latency (bench/RESULTS.md).
pw::models::Cluster this_cpu_cluster(int devices) {
  return pw::models::make_flat_cluster(pw::models::find_device("cpu-core-avx2"), devices, 20e9, 10'000);
}

pw::planner::Plan plan_on_cores(const pw::models::Profile& measured, const pw::models::Cluster& cluster,
                                const pw::models::Model& model) {
  pw::planner::PlanRequest req;
  req.batch = model.batch();
  req.schedule = pw::planner::ScheduleKind::one_f_one_b;
  req.optimizer = "sgd-momentum";
  const pw::planner::PlanOutcome out = pw::sim::plan_with_prediction(measured, cluster, req);
  if (!out.feasible) throw pw::Infeasible("the default model does not fit this machine: " + out.reason);
  pw::planner::Plan plan = out.plan;
  pw::planner::set_plan_inputs(plan, measured, cluster, /*embed=*/false);  // plan.json names its inputs
  std::cout << "\n== 4. Plan for " << cluster.num_devices() << " workers (batch " << plan.batch << ") ==\n"
            << pw::planner::format_plan_table(plan);
  return plan;
}

struct TrainedRun {
  exec::PipelineRunResult run;
  exec::Prediction prediction;  // measured in rounds between the run's steps, as `run --compare`
  int recorded_steps = 0;       // warm-up and timed steps in run.trace
};

TrainedRun train_beside_prediction(const DemoArgs& a, const pw::models::Model& model, const pw::planner::Plan& plan,
                                   int threads) {
  std::cout << "\n== 6. Training it as a real pipeline (" << a.steps << " steps) ==\n";
  exec::OptimizerOptions opt;  // SGD with momentum, as `run`
  exec::PipelineRunOptions ro;
  ro.steps = a.steps;
  ro.warmup_steps = 10;  // the machine warms up over the first steps; they train but are not timed
  ro.optimizer = opt;
  ro.threads_per_worker = threads;
  std::unique_ptr<exec::PredictionMeasurement> measurement;
  const auto start_measurement = [&]() -> exec::PredictionMeasurement& {
    if (!measurement)
      measurement = std::make_unique<exec::PredictionMeasurement>(
          model, plan, threads, opt, exec::measure_draw_ns(model, ro.data_file, ro.seed, plan.batch));
    return *measurement;
  };
  ro.between_steps = exec::compare_rounds_between_steps(ro.warmup_steps, ro.steps, start_measurement);
  TrainedRun t;
  t.run = exec::run_pipeline(model, plan, ro, [](const exec::StepReport& s) {
    std::printf("step %d/%d  loss %.4f  %.1f samples/s\n", s.step, s.steps, s.loss, s.samples_per_s);
    std::fflush(stdout);
  });
  if (!t.run.warning.empty()) std::fprintf(stderr, "%s\n", t.run.warning.c_str());
  t.prediction = start_measurement().predict();
  t.recorded_steps = ro.warmup_steps + a.steps;
  return t;
}

void print_comparison(const DemoArgs& a, const TrainedRun& t, const exec::MachineLoad& load_before) {
  const exec::Prediction& pred = t.prediction;
  const exec::PipelineRunResult& run = t.run;
  std::cout << "\n== 7. Predicted vs measured ==\n";
  std::printf("iteration: predicted %.2f ms, measured %.2f ms (median of %d steps, %+.1f%%)\n", pred.iteration_ms,
              run.median_iteration_ms, a.steps, 100.0 * (run.median_iteration_ms / pred.iteration_ms - 1.0));
  for (size_t d = 0; d < run.peak_memory_bytes.size(); ++d)
    std::printf("worker %zu (%s): peak memory predicted %s, measured %s\n", d, run.placement[d].c_str(),
                pw::tools::human_bytes(double(pred.peak_memory_bytes.at(d))).c_str(),
                pw::tools::human_bytes(double(run.peak_memory_bytes[d])).c_str());
  std::printf("loss %.4f -> %.4f\n", run.losses.front(), run.losses.back());
  const exec::MachineLoad load_after = exec::sample_machine_load();
  std::printf("%s before the run, %.1f after; %s; hand-offs: spin %lld us then sleep\n",
              exec::describe(load_before).c_str(), load_after.busy_cores, exec::describe_wait_policy().c_str(),
              static_cast<long long>(run.transport_spin_ns / 1000));
  if (exec::is_busy(load_before) || exec::is_busy(load_after))
    std::printf(
        "note: the machine was busy with other work, so the measured times include waiting for the CPU; "
        "the prediction assumes the cores to ourselves: compare on a quiet machine\n");
}

void write_outputs(const DemoArgs& a, const pw::models::Profile& measured, const pw::planner::Plan& plan,
                   const pw::sim::SimResult& predicted, const TrainedRun& t) {
  pw::models::save_profile_file(out_path(a, "profile.json"), measured);
  pw::planner::save_plan_file(out_path(a, "plan.json"), plan);
  pw::sim::write_timeline_files(predicted.trace, predicted.report, "predicted: default model",
                                out_path(a, "predicted.trace.json"), out_path(a, "predicted.svg"));
  const pw::sim::Report measured_report =
      pw::sim::summarize(t.run.trace, pw::sim::run_info_for_plan(plan, t.recorded_steps));
  pw::sim::write_timeline_files(t.run.trace, measured_report, "measured: default model",
                                out_path(a, "measured.trace.json"), out_path(a, "measured.svg"));
  std::cout << "wrote profile.json, plan.json, predicted/measured .trace.json and .svg to " << a.out_dir << "\n";
}

void plan_simulate_run(const DemoArgs& a, const pw::models::Model& model) {
  // The prediction assumes the cores to ourselves: read the load others put on them before we
  // start and after we finish, and say so when the comparison was taken on a busy machine.
  const exec::MachineLoad load_before = exec::sample_machine_load();
  const int cores = exec::Machine::instance().num_cores();
  const int devices = a.stages > 0 ? a.stages : std::max(2, cores);
  const int threads = std::max(1, cores / devices);
  exec::set_num_threads(threads);
  const pw::models::Profile measured = measure_on_this_cpu(a, model, threads);
  const pw::models::Cluster cluster = this_cpu_cluster(devices);
  const pw::planner::Plan plan = plan_on_cores(measured, cluster, model);

  pw::sim::SimOptions so;
  so.record_trace = !a.out_dir.empty();
  so.schedule_bubble = true;
  const pw::sim::SimResult predicted = pw::sim::simulate_plan(plan, measured, &cluster, so);
  std::cout << "\n== 5. Simulation of the plan ==\n" << pw::sim::format_report(predicted.report);

  const TrainedRun t = train_beside_prediction(a, model, plan, threads);
  print_comparison(a, t, load_before);
  if (!a.out_dir.empty()) write_outputs(a, measured, plan, predicted, t);
}
#endif

void run(const DemoArgs& a) {
  if (a.micro_batch < 1)
    throw pw::InputError("--micro-batch: expected an integer >= 1, got " + std::to_string(a.micro_batch));
  if (a.steps < 1) throw pw::InputError("--steps: expected an integer >= 1, got " + std::to_string(a.steps));
  if (a.stages < 0) throw pw::InputError("--stages: expected an integer >= 1");
  pw::OutputSet outputs;
  if (!a.out_dir.empty()) {
    pw::check_output_directory("--out-dir", a.out_dir);
    std::error_code ec;
    std::filesystem::create_directories(a.out_dir, ec);
    if (!std::filesystem::is_directory(a.out_dir))
      throw pw::InputError("--out-dir: cannot create the directory " + a.out_dir +
                           (ec ? " (" + ec.message() + ")" : std::string(" (a file of that name exists)")));
#ifdef PW_HAVE_EXEC
    for (const char* name :
         {"profile.json", "plan.json", "predicted.trace.json", "predicted.svg", "measured.trace.json", "measured.svg"})
      outputs.add("--out-dir", out_path(a, name));
#endif
  }
  const pw::tools::ModelSource src = pw::tools::resolve_model("default", {}, "model");
  describe(a, src);
#ifdef PW_HAVE_EXEC
  plan_simulate_run(a, src.model);
  outputs.commit();
#else
  std::cout << "\n(built without the executor, -DPW_WITH_DNNL=OFF: measuring, training and the predicted-vs-measured\n"
               " comparison need it; `pipewright plan` and `simulate` work on the analytic profile above)\n";
#endif
}

pw::tools::CommandRegistrar register_demo("demo", [](CLI::App& app) {
  auto a = std::make_shared<DemoArgs>();
  auto* sub =
      app.add_subcommand("demo", "The main job on the built-in default model: profile, plan, simulate, run, compare");
  sub->add_option("--device", a->device, "catalog device of the analytic profile")->capture_default_str();
  sub->add_option("--micro-batch", a->micro_batch, "samples per micro-batch when profiling")->capture_default_str();
  sub->add_option("--steps", a->steps, "training steps of the pipeline run")->capture_default_str();
  sub->add_option("--stages", a->stages, "pipeline workers (default: this machine's cores, at least 2)");
  sub->add_option("--out-dir", a->out_dir, "directory to write profile, plan and timelines into");
  sub->callback([a] { run(*a); });
});

}  // namespace
