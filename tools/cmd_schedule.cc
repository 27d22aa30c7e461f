// `pipewright schedule export|import`: exchange schedules with PyTorch's
// torch.distributed.pipelining (the compute_only CSV action format, planner/schedule_csv.h).
// export writes a generated or planned schedule as CSV; import reads a CSV, validates it,
// simulates it with equal stage times (or a plan's stage costs) and draws it.
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "models/error.h"
#include "models/json_util.h"
#include "models/output_set.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "planner/schedule_csv.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"
#include "sim/engine.h"
#include "sim/plan_costs.h"
#include "sim/report.h"
#include "sim/trace_io.h"
#include "tools/command_registry.h"
#include "tools/flag_checks.h"
#include "tools/plan_inputs.h"

namespace pw::tools {
namespace {

struct ExportArgs {
  std::string plan, profile, schedule = "1f1b", output;
  int stages = 0, micro_batches = 0, chunks = 1;
};

struct ImportArgs {
  std::string csv, kind, plan, profile, output, trace, svg;
  double t_f = 1, t_b = 2, t_w = 0, t_comm = 0;
  int iterations = 1;
  bool json = false;
};

planner::Schedule plan_schedule(const planner::Plan& plan, const std::string& plan_file, const std::string& profile) {
  const sim::StageCosts costs = plan_costs(plan, plan_file, profile, "").costs;
  try {
    return sim::schedule_for_plan(plan, costs);
  } catch (const InputError& e) { throw InputError(plan_file + ": " + e.what()); }
}

void run_export(const ExportArgs& a, CLI::App* sub) {
  OutputSet outputs;
  outputs.add("-o", a.output);
  planner::Schedule s;
  if (!a.plan.empty()) {
    for (const char* flag : {"--schedule", "--stages", "--micro-batches", "--chunks"})
      if (sub->count(flag)) throw InputError(std::string(flag) + ": not used with --plan (the plan names it)");
    s = plan_schedule(planner::load_plan_file(a.plan), a.plan, a.profile);
  } else {
    if (!a.profile.empty()) throw InputError("--profile: only used with --plan");
    if (!sub->count("--stages")) throw InputError("schedule export: give --plan FILE or --stages N --micro-batches M");
    if (!sub->count("--micro-batches")) throw InputError("--micro-batches: required with --stages");
    const planner::ScheduleKind kind = planner::parse_schedule_kind(a.schedule, "--schedule");
    try {
      s = planner::make_schedule(kind, a.stages, a.micro_batches, a.chunks);
    } catch (const InputError& e) { throw InputError(std::string("--schedule ") + a.schedule + ": " + e.what()); }
  }
  const std::string csv = planner::schedule_to_csv(s);
  if (a.output.empty()) std::cout << csv;
  else write_file_atomic(a.output, csv);
  outputs.commit();
}

// The outputs (-o, --trace, --svg) are written to temporaries before the report is printed and
// renamed into place together after it (models/output_set.h).
void run_import(const ImportArgs& a, CLI::App* sub) {
  OutputSet outputs;
  outputs.add("-o", a.output);
  outputs.add("--trace", a.trace);
  outputs.add("--svg", a.svg);
  if (a.iterations < 1) throw InputError("--iterations: expected >= 1, got " + std::to_string(a.iterations));
  std::optional<planner::ScheduleKind> kind;
  if (!a.kind.empty()) kind = planner::parse_schedule_kind(a.kind, "--kind");
  planner::Schedule s = planner::load_schedule_csv(a.csv, kind);
  try {
    planner::validate_schedule(s);
  } catch (const InputError& e) { throw InputError(a.csv + ": " + e.what()); }
  sim::StageCosts costs;
  sim::Network net = sim::Network::fixed(ms_flag_to_ns(a.t_comm, "--t-comm"));
  if (!a.plan.empty()) {
    for (const char* flag : {"--t-f", "--t-b", "--t-w"})
      if (sub->count(flag)) throw InputError(std::string(flag) + ": not used with --plan (the plan has stage costs)");
    const planner::Plan plan = planner::load_plan_file(a.plan);
    const PlanCosts pc = plan_costs(plan, a.plan, a.profile, "");
    costs = pc.costs;
    try {
      sim::check_schedule_on_plan(s, plan);
    } catch (const InputError& e) { throw InputError(a.csv + " with " + a.plan + ": " + e.what()); }
    if (!sub->count("--t-comm")) net = sim::network_for_plan(plan, pc.cluster_ptr());  // as simulate --plan
  } else {
    if (!a.profile.empty()) throw InputError("--profile: only used with --plan");
    costs = sim::StageCosts::uniform(s.num_stages, ms_flag_to_ns(a.t_f, "--t-f"), ms_flag_to_ns(a.t_b, "--t-b"),
                                     ms_flag_to_ns(a.t_w, "--t-w"));
  }
  sim::SimOptions opt;
  opt.iterations = a.iterations;
  opt.record_trace = !a.trace.empty() || !a.svg.empty();
  const sim::SimResult r = sim::simulate(s, costs, net, opt);
  if (!a.output.empty()) save_json_file(a.output, Json(s));
  sim::write_timeline_files(r.trace, r.report, a.csv + ": " + std::string(to_string(s.kind)), a.trace, a.svg);
  if (a.json) {
    Json j;
    to_json(j, r.report);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << a.csv << ": " << to_string(s.kind) << ", " << s.num_devices << " ranks, " << s.num_stages
              << " stages, " << s.num_micro_batches << " micro-batches; valid\n"
              << sim::format_report(r.report);
  }
  outputs.commit();
}

CommandRegistrar register_schedule("schedule", [](CLI::App& app) {
  auto* sub = app.add_subcommand("schedule", "exchange schedules with PyTorch (torch.distributed.pipelining CSV)");
  sub->require_subcommand(1);

  auto e = std::make_shared<ExportArgs>();
  auto* ex = sub->add_subcommand("export", "write a schedule as PyTorch's compute_only CSV (one row per rank)");
  ex->add_option("--plan", e->plan, "plan JSON (pipewright.plan/1): its schedule");
  ex->add_option("--profile", e->profile, "with --plan: the profile it was made from (orders zb-h2 by cost)");
  ex->add_option("--schedule", e->schedule,
                 "gpipe|1f1b|interleaved-1f1b|zb-h1|zb-h2|pipedream-async|2bw (default 1f1b)");
  ex->add_option("--stages", e->stages, "pipeline stages (ranks)");
  ex->add_option("--micro-batches", e->micro_batches, "micro-batches per iteration");
  ex->add_option("--chunks", e->chunks, "model chunks per rank (interleaved-1f1b)");
  ex->add_option("-o,--output", e->output, "write the CSV to this file (default stdout)");
  ex->callback([e, ex] { run_export(*e, ex); });

  auto i = std::make_shared<ImportArgs>();
  auto* im = sub->add_subcommand("import", "read a PyTorch schedule CSV: validate, simulate, draw");
  im->add_option("csv", i->csv, "CSV file (row r = rank r; actions like 0F1, 1I1, 1W1, 0B1)")->required();
  im->add_option("--kind", i->kind,
                 "schedule kind (default: inferred: zb-h1 with I/W, interleaved-1f1b with "
                 "several stages per rank, else 1f1b)");
  im->add_option("--plan", i->plan, "price the schedule with this plan's stage costs (same stage count)");
  im->add_option("--profile", i->profile, "with --plan: the profile it was made from");
  im->add_option("--t-f", i->t_f, "without --plan: forward time per stage and micro-batch (ms, default 1)");
  im->add_option("--t-b", i->t_b, "input-gradient backward time, I; full backward B = I + W (ms, default 2)");
  im->add_option("--t-w", i->t_w, "weight-gradient backward time, W (ms, default 0)");
  im->add_option("--t-comm", i->t_comm, "transfer time per hop (ms; default 0, with --plan the plan's own)");
  im->add_option("--iterations", i->iterations, "iterations simulated back to back (default 1)");
  im->add_flag("--json", i->json, "print the simulation report as JSON");
  im->add_option("-o,--output", i->output, "write the schedule as pipewright.schedule/1 JSON");
  im->add_option("--trace", i->trace, "write a Chrome trace-event JSON file");
  im->add_option("--svg", i->svg, "write an SVG timeline");
  im->callback([i, im] { run_import(*i, im); });
});

}  // namespace
}  // namespace pw::tools
