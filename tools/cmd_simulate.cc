// `pipewright simulate`: predicts what a plan (or a uniform pipeline) does: iteration time,
// bubble, per-stage busy/idle time, peak memory; optionally writes a Chrome trace and an SVG
// timeline.
#include <cmath>
#include <iostream>
#include <optional>

#include "models/cluster.h"
#include "models/error.h"
#include "models/json_util.h"
#include "models/output_set.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "planner/schedule_gen.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"
#include "sim/plan_prediction.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/trace_io.h"
#include "tools/command_registry.h"
#include "tools/flag_checks.h"
#include "tools/plan_inputs.h"

namespace pw::tools {
namespace {

struct SimulateArgs {
  std::string plan, profile, cluster, replay;
  bool uniform = false;
  int stages = 0, micro_batches = 0, chunks = 1, iterations = 1;
  double t_f = -1, t_b = -1, t_w = 0, t_comm = 0;
  std::string schedule = "1f1b";
  bool json = false;
  std::string trace, svg;
};

// --replay: the measured per-op durations of a run (`run --run-trace F`) through the same
// schedule and simulator (sim/replay.h).
void run_replay(const SimulateArgs& a, CLI::App* sub) {
  for (const char* flag : {"--plan", "--profile", "--cluster", "--uniform", "--stages", "--micro-batches", "--t-f",
                           "--t-b", "--t-w", "--t-comm", "--schedule", "--chunks", "--iterations"})
    if (sub->count(flag)) throw InputError(std::string(flag) + ": not used with --replay");
  sim::RunTrace rt;
  rt = parse_json_file<sim::RunTrace>(a.replay, sim::run_trace_from_json);
  const sim::ReplayResult r = sim::replay_run_trace(rt, a.replay);
  if (!a.trace.empty() || !a.svg.empty()) {
    sim::RunInfo info;
    info.schedule = std::string(planner::to_string(rt.schedule));
    info.num_stages = rt.stages;
    info.num_micro_batches = rt.micro_batches;
    sim::write_timeline_files(r.replayed, sim::summarize(r.replayed, info), "replayed: " + info.schedule, a.trace,
                              a.svg);
  }
  if (a.json) {
    Json ops = Json::array();
    for (const auto& e : r.ops)
      ops.push_back({{"stage", e.stage},
                     {"op", std::string(planner::to_string(e.kind))},
                     {"count", e.count},
                     {"predicted_ns", e.predicted_ns},
                     {"measured_ns", e.measured_ns},
                     {"error_ns", e.error_ns()}});
    Json j{{"format", format_tag("replay", 1)},
           {"first_iteration", r.first_iteration},
           {"iterations", r.iterations},
           {"measured_ns", r.measured_ns},
           {"replayed_ns", r.replayed_ns},
           {"predicted_ns", r.predicted_ns},
           {"cost_model_error_ns", r.cost_model_error_ns()},
           {"scheduling_error_ns", r.scheduling_error_ns()},
           {"ops", ops}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << sim::format_replay(r);
  }
}

// What one simulation runs: the schedule, its costs and network, a title for the timeline, and
// how many plan iterations one simulated iteration holds (the replicas' round-robin period).
struct SimulationInput {
  planner::Schedule schedule;
  sim::StageCosts costs;
  sim::Network network;
  std::string title;
  int plan_iterations = 1;
};

SimulationInput uniform_input(const SimulateArgs& a, CLI::App* sub) {
  for (const char* flag : {"--plan", "--profile", "--cluster"})
    if (sub->count(flag)) throw InputError(std::string(flag) + ": not used with --uniform");
  if (!sub->count("--stages")) throw InputError("--stages: required with --uniform");
  if (!sub->count("--micro-batches")) throw InputError("--micro-batches: required with --uniform");
  if (!sub->count("--t-f")) throw InputError("--t-f: required with --uniform");
  if (!sub->count("--t-b")) throw InputError("--t-b: required with --uniform");
  if (a.stages < 1) throw InputError("--stages: expected >= 1, got " + std::to_string(a.stages));
  if (a.micro_batches < 1) throw InputError("--micro-batches: expected >= 1, got " + std::to_string(a.micro_batches));
  const planner::ScheduleKind kind = planner::parse_schedule_kind(a.schedule, "--schedule");
  const int64_t f = ms_flag_to_ns(a.t_f, "--t-f"), b = ms_flag_to_ns(a.t_b, "--t-b"), w = ms_flag_to_ns(a.t_w, "--t-w");
  const int64_t comm = ms_flag_to_ns(a.t_comm, "--t-comm");
  SimulationInput in;
  try {
    in.schedule = planner::make_schedule(kind, a.stages, a.micro_batches, a.chunks);
  } catch (const InputError& e) { throw InputError(std::string("--schedule ") + a.schedule + ": " + e.what()); }
  in.costs = sim::StageCosts::uniform(in.schedule.num_stages, f, b, w);
  in.network = sim::Network::fixed(comm);
  in.title = a.schedule + ": " + std::to_string(a.stages) + " stages" +
             (a.chunks > 1 ? " x " + std::to_string(a.chunks) + " chunks" : "") + ", " +
             std::to_string(a.micro_batches) + " micro-batches";
  return in;
}

SimulationInput plan_input(const SimulateArgs& a, CLI::App* sub) {
  for (const char* flag :
       {"--stages", "--micro-batches", "--t-f", "--t-b", "--t-w", "--t-comm", "--schedule", "--chunks"})
    if (sub->count(flag)) throw InputError(std::string(flag) + ": only used with --uniform");
  const planner::Plan plan = planner::load_plan_file(a.plan);
  const PlanCosts pc = plan_costs(plan, a.plan, a.profile, a.cluster);
  SimulationInput in;
  in.costs = pc.costs;
  const models::Cluster* cl = pc.cluster_ptr();
  try {
    in.schedule = sim::schedule_for_plan(plan, in.costs);
    in.network = sim::network_for_plan(plan, cl);
  } catch (const InputError& e) { throw InputError(a.plan + ": " + e.what()); }
  in.title = "plan " + plan.model + ": " + std::string(to_string(plan.schedule)) + ", " +
             std::to_string(plan.num_stages()) + " stages, " + std::to_string(plan.num_micro_batches) +
             " micro-batches of " + std::to_string(plan.micro_batch_size);
  if (in.schedule.num_micro_batches != plan.num_micro_batches)
    in.plan_iterations = in.schedule.num_micro_batches / plan.num_micro_batches;
  if (!in.schedule.stage_replicas.empty()) {
    in.title += ", replicas";
    for (int k = 0; k < plan.num_stages(); ++k) in.title += (k ? "," : " ") + std::to_string(plan.stages[k].replicas());
    in.title += " on " + std::to_string(in.schedule.num_devices) + " devices";
  }
  return in;
}

// The outputs (--trace, --svg) are written to temporaries before the report is printed and
// renamed into place after it (models/output_set.h).
void simulate(const SimulateArgs& a, CLI::App* sub) {
  if (!a.replay.empty()) return run_replay(a, sub);
  if (a.uniform == !a.plan.empty()) throw InputError("simulate: give exactly one of --plan FILE or --uniform");
  if (a.iterations < 1) throw InputError("--iterations: expected >= 1, got " + std::to_string(a.iterations));
  const SimulationInput in = a.uniform ? uniform_input(a, sub) : plan_input(a, sub);
  const planner::Schedule& schedule = in.schedule;
  const int plan_iterations = in.plan_iterations;
  sim::SimOptions opt;
  opt.iterations = a.iterations;
  // An asynchronous plan has no flush: one iteration is only the pipeline's fill and drain, so
  // without --iterations simulate enough of them for the steady state the planner predicts.
  std::string note;
  if (plan_iterations > 1)
    note = "one simulated iteration is " + std::to_string(plan_iterations) + " of the plan's iterations (" +
           std::to_string(schedule.num_micro_batches) + " micro-batches: the replicas' round-robin period and the " +
           "1F1B warm-up)\n";
  if (!a.plan.empty() && !sub->count("--iterations") && !planner::is_synchronous(schedule.kind)) {
    opt.iterations = sim::kAsyncPlanIterations;
    note += "asynchronous plan: " + std::to_string(sim::kAsyncPlanIterations) +
            " iterations simulated for the steady state (--iterations to change)\n";
  }
  opt.record_trace = !a.trace.empty() || !a.svg.empty();
  opt.schedule_bubble = true;
  const sim::SimResult r = sim::simulate(schedule, in.costs, in.network, opt);
  sim::write_timeline_files(r.trace, r.report, in.title, a.trace, a.svg);
  if (a.json) {
    Json j;
    to_json(j, r.report);
    if (plan_iterations > 1) j["plan_iterations_per_iteration"] = plan_iterations;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << note << sim::format_report(r.report);
  }
}

void run_simulate(const SimulateArgs& a, CLI::App* sub) {
  OutputSet outputs;
  outputs.add("--trace", a.trace);
  outputs.add("--svg", a.svg);
  simulate(a, sub);
  outputs.commit();
}

CommandRegistrar register_simulate("simulate", [](CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  auto* sub = app.add_subcommand(
      "simulate", "simulate a plan or a uniform pipeline: iteration time, bubble, idle time, peak memory");
  sub->add_option("--plan", args->plan, "plan JSON (pipewright.plan/1)");
  sub->add_option("--profile", args->profile, "profile the plan was made from (layer costs)");
  sub->add_option("--cluster", args->cluster, "cluster JSON (link bandwidth and latency)");
  sub->add_option("--replay", args->replay,
                  "a measured run (run --compare --run-trace F): replay its op durations, split the error");
  sub->add_option("--iterations", args->iterations,
                  "iterations simulated back to back (default 1; 100 for an asynchronous --plan)");
  sub->add_flag("--uniform", args->uniform, "equal stages with the times given below");
  sub->add_option("--stages", args->stages, "pipeline stages (devices)");
  sub->add_option("--micro-batches", args->micro_batches, "micro-batches per iteration");
  sub->add_option("--t-f", args->t_f, "forward time per micro-batch and stage (ms)");
  sub->add_option("--t-b", args->t_b, "input-gradient backward time (ms)");
  sub->add_option("--t-w", args->t_w, "weight-gradient backward time (ms, default 0)");
  sub->add_option("--t-comm", args->t_comm, "transfer time per hop (ms, default 0)");
  sub->add_option("--schedule", args->schedule,
                  "gpipe|1f1b|interleaved-1f1b|zb-h1|zb-h2|pipedream-async|2bw (default 1f1b)");
  sub->add_option("--chunks", args->chunks, "model chunks per device (interleaved-1f1b)");
  sub->add_flag("--json", args->json, "print the report as JSON");
  sub->add_option("--trace", args->trace, "write a Chrome trace-event JSON file");
  sub->add_option("--svg", args->svg, "write an SVG timeline");
  sub->callback([args, sub] { run_simulate(*args, sub); });
});

}  // namespace
}  // namespace pw::tools
