// `pipewright plan`: partition a profiled model over a cluster (planner/planner.h) and print or
// save the plan (pipewright.plan/1). Exit 3 with the smallest memory that fits and the largest
// batch that fits now when nothing fits.
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>

#include "models/cluster.h"
#include "models/cost.h"
#include "models/defaults.h"
#include "models/error.h"
#include "models/median.h"
#include "models/output_set.h"
#include "models/pipedream_import.h"
#include "models/profile.h"
#include "planner/plan_formats.h"
#include "planner/planner.h"
#include "planner/schedule.h"
#include "sim/plan_prediction.h"
#include "tools/cluster_flags.h"
#include "tools/command_registry.h"
#include "tools/flag_checks.h"
#include "tools/model_report.h"
#include "tools/plan_trials.h"  // constants only without the executor (plan_trials.cc needs it)
#include "tools/zoo_flags.h"

#ifdef PW_HAVE_EXEC
#include <cstdio>

#include "exec/machine/memory.h"
#include "exec/profile/machine_cluster.h"
#include "exec/profile/measure_memory.h"
#include "exec/profile/profiler.h"
#endif

namespace {

struct PlanArgs {
  std::string profile, model, device;
  pw::tools::ClusterFlags cl;  // tools/cluster_flags.h
  pw::models::ZooOptions zoo;  // sizing flags of a zoo --model
  std::string dtype;           // "" = models::default_dtype of the device
  bool bf16 = false;
  double efficiency = pw::models::kDefaultEfficiency;
  pw::planner::PlanRequest req;  // its typed choices are parsed from `choice` (check_flags)
  struct {
    std::string micro_batches = "auto", schedule = "auto", objective = "sync", partitioner = "dp";
    std::string recompute = pw::models::kDefaultRecompute;
  } choice;
  std::string batch_str;
  bool json = false;
  std::string output;
  std::string format;                         // --format megatron|deepspeed|torch (planner/plan_formats.h)
  bool measure = false;                       // measure --model on this machine and plan for this machine
  int trials = 3;                             // --measure: rounds of trial runs of the near ties (tools/plan_trials.h)
  double trial_band = pw::tools::kTrialBand;  // --trial-band
  double trial_seconds = pw::tools::kTrialSeconds;          // --trial-seconds
  std::shared_ptr<const pw::models::Model> measured_model;  // --measure: the model run in trials
  // Set while loading: what the plan records as its inputs (planner::Plan::inputs).
  pw::Json model_json;
  std::string dtype_used = "fp32";
};

// A zoo or file --model also sets the default batch: the model's own (PipeDream graphs and
// profiles carry theirs).
pw::models::Profile load_profile(PlanArgs& a, const CLI::App& sub) {
  if (!a.profile.empty() && !a.model.empty()) throw pw::InputError("--profile and --model: give one of them");
  if (!a.profile.empty()) { return pw::models::load_any_profile_file(a.profile); }
  if (a.model.empty()) throw pw::InputError("plan: expected --profile FILE or --model M --device D");
  if (a.device.empty()) throw pw::InputError("--model: needs --device");
  if (const char* flag = pw::tools::first_size_flag_given(sub);
      flag != nullptr && (!pw::tools::is_zoo_name(a.model) || a.model == "default"))
    throw pw::InputError(std::string(flag) + ": sizing options apply to a zoo family, not to \"" + a.model + "\"");
  if (pw::tools::is_zoo_name(a.model) && a.model != "default") pw::tools::check_size_flags_for_family(a.model, sub);
  pw::models::ZooOptions zo = a.zoo;
  if (a.req.batch > 0) zo.batch = a.req.batch;
  auto src = pw::tools::resolve_model(a.model, zo, "--model");
  if (a.req.batch == 0) a.req.batch = src.model.batch();
  a.model_json = src.model;
  const auto dev = pw::tools::resolve_device(a.device, "--device");
  const bool bf16 = pw::models::resolve_bf16(a.bf16, a.dtype, dev);
  a.dtype_used = bf16 ? "bf16" : "fp32";
  a.req.optimizer = pw::models::priced_optimizer(a.req.optimizer, bf16);
  return pw::models::default_analytic_profile(src.model, dev, a.req.batch, bf16, a.req.optimizer, a.efficiency);
}

#ifdef PW_HAVE_EXEC
// --measure: this machine's profile of --model at power-of-two micro-batch sizes dividing the
// batch (and the batch itself) on 1 thread and on all cores, in context and co-run; the
// cluster is this machine as hwloc sees it (exec/profile/machine_cluster.h).
std::pair<pw::models::Profile, pw::models::Cluster> measure_here(PlanArgs& a) {
  if (!a.profile.empty() || !a.device.empty() || !a.cl.cluster.empty() || a.cl.devices >= 0 || !a.cl.levels.empty())
    throw pw::InputError("--measure: plans for this machine; drop --profile, --device, --cluster, --devices, --levels");
  if (a.model.empty()) throw pw::InputError("--measure: needs --model");
  if (a.bf16 || (!a.dtype.empty() && a.dtype != "fp32"))
    throw pw::InputError("--measure: this machine's executor computes in fp32; drop --bf16/--dtype");
  pw::models::ZooOptions zo = a.zoo;
  if (a.req.batch > 0) zo.batch = a.req.batch;
  auto src = pw::tools::resolve_model(a.model, zo, "--model");
  if (a.req.batch == 0) a.req.batch = src.model.batch();
  a.model_json = src.model;
  a.measured_model = std::make_shared<const pw::models::Model>(src.model);
  const int cores = pw::exec::Machine::instance().num_cores();
  pw::exec::MeasureOptions o;
  for (int64_t b = 1; b <= a.req.batch; b *= 2)
    if (a.req.batch % b == 0) o.micro_batches.push_back(b);
  if (o.micro_batches.back() != a.req.batch) o.micro_batches.push_back(a.req.batch);
  o.thread_counts = {1};
  if (cores > 1) o.thread_counts.push_back(cores);
  o.micro_batch = o.micro_batches.front();
  o.threads = 1;
  o.reps = pw::exec::kInContextTimedPasses;
  o.warmup = pw::exec::kInContextWarmupPasses;
  o.rounds = pw::exec::kInContextRounds;
  o.optimizer = a.req.optimizer;
  o.progress = [](int done, int total, const std::string& what) {
    std::fprintf(stderr, "measured %d/%d (%s)\n", done, total, what.c_str());
  };
  // A size whose co-run copies would not fit in memory is left out (the planner then prices
  // it from the nearest measured size and says so); the smallest must fit.
  o.drop_sizes_over_memory = true;
  o.note = [](const std::string& what) { std::fprintf(stderr, "--measure: %s\n", what.c_str()); };
  pw::models::Profile p = pw::exec::measure_profile(src.model, o);
  // Each core's share of what the trials and the run can have now (not of the machine's RAM,
  // which a trial run over it would learn from the OOM killer), unless --memory says otherwise.
  // (0 when unknown: this_machine_cluster then takes the RAM's share.)
  int64_t memory = a.cl.memory;
  if (memory <= 0)
    memory =
        static_cast<int64_t>(pw::exec::kMeasureMemoryShare * static_cast<double>(pw::exec::available_memory_bytes())) /
        cores;
  return {p, pw::exec::this_machine_cluster(memory)};
}
#endif

void check_flags(PlanArgs& a, const CLI::App& sub) {
  a.req.micro_batches = pw::planner::parse_micro_batches_request(a.choice.micro_batches, "--micro-batches");
  a.req.schedule = pw::planner::parse_schedule_request(a.choice.schedule, "--schedule");
  a.req.objective = pw::planner::parse_objective(a.choice.objective, "--objective");
  a.req.partitioner = pw::planner::parse_partitioner(a.choice.partitioner, "--partitioner");
  a.req.recompute = pw::planner::parse_recompute_choice(a.choice.recompute, "--recompute");
  if (!a.format.empty() && a.json) throw pw::InputError("--format and --json: give one of them");
  if (sub.count("--trials") > 0 && !a.measure) throw pw::InputError("--trials: only with --measure");
  if (a.trials < 0) throw pw::InputError("--trials: expected rounds >= 0, got " + std::to_string(a.trials));
  if (sub.count("--trial-band") > 0 && !a.measure) throw pw::InputError("--trial-band: only with --measure");
  if (!(a.trial_band >= 0))
    throw pw::InputError("--trial-band: expected a fraction >= 0, got " + std::to_string(a.trial_band));
  if (sub.count("--trial-seconds") > 0 && !a.measure) throw pw::InputError("--trial-seconds: only with --measure");
  if (!(a.trial_seconds >= 0))
    throw pw::InputError("--trial-seconds: expected seconds >= 0, got " + std::to_string(a.trial_seconds));
}

// What the plan is made from: this machine measured (--measure), or a profile and a cluster.
std::pair<pw::models::Profile, pw::models::Cluster> load_inputs(PlanArgs& a, const CLI::App& sub) {
  if (a.measure) {
#ifdef PW_HAVE_EXEC
    return measure_here(a);
#else
    throw pw::InputError("--measure: this pipewright was built without the executor (oneDNN)");
#endif
  }
  pw::models::Profile profile = load_profile(a, sub);
  a.cl.device = a.device;
  return {std::move(profile), pw::tools::build_cluster(a.cl, sub)};
}

// Exit 3, in GiB, with the nearest changes that would fit as flags to pass.
[[noreturn]] void throw_infeasible(const pw::planner::PlanOutcome& out, const PlanArgs& a,
                                   const pw::models::Cluster& cluster) {
  if (out.max_batch_that_fits < 0) throw pw::Infeasible(out.reason);  // a simulated schedule over memory
  const int64_t have = a.req.memory_limit_bytes > 0 ? a.req.memory_limit_bytes : cluster.device().memory_bytes;
  std::ostringstream msg;
  msg << "nothing fits in " << pw::tools::human_bytes(static_cast<double>(have)) << " per device (" << out.reason
      << "); smallest per-device memory that would fit: ";
  if (out.min_memory_bytes_to_fit > 0)
    msg << pw::tools::human_bytes(static_cast<double>(out.min_memory_bytes_to_fit)) << " (--memory-limit "
        << out.min_memory_bytes_to_fit << ")";
  else msg << "none (no partition exists)";
  msg << "; largest batch that fits now: " << out.max_batch_that_fits;
  if (out.max_batch_that_fits > 0) msg << " (--batch " << out.max_batch_that_fits << ")";
  throw pw::Infeasible(msg.str());
}

// --measure's record of its choice (inputs.options.candidates and .trials).
struct TrialRecords {
  pw::Json candidates, trials;
};

#ifdef PW_HAVE_EXEC
// Every (cores per stage, micro-batch count) the search priced, fastest first: what the trials
// chose from, printed and recorded so a user sees what was left out and why.
pw::Json print_candidates(const std::vector<pw::planner::PlanCandidate>& candidates, int64_t batch) {
  pw::Json record = pw::Json::array();
  for (const auto& c : candidates) {
    const int64_t size = (batch + c.micro_batches - 1) / c.micro_batches;
    std::fprintf(stderr, "candidate: %d stage%s x %d thread%s, %d x %lld: predicted %.3f ms\n", c.stages,
                 c.stages == 1 ? "" : "s", c.threads_per_stage, c.threads_per_stage == 1 ? "" : "s", c.micro_batches,
                 static_cast<long long>(size), c.predicted_s * 1e3);
    record.push_back({{"stages", c.stages},
                      {"threads_per_stage", c.threads_per_stage},
                      {"micro_batches", c.micro_batches},
                      {"micro_batch_size", size},
                      {"predicted_ms", c.predicted_s * 1e3}});
  }
  return record;
}

// --measure (sync, a schedule with a closed form): trial runs of the near ties choose the plan.
pw::sim::PlanChooser trial_chooser(const PlanArgs& a, const pw::models::Profile& profile,
                                   const pw::models::Cluster& cluster, TrialRecords& records) {
  return [&a, &profile, &cluster, &records](const pw::planner::PlanOutcome& out) {
    records.candidates = print_candidates(out.candidates, a.req.batch);
    const pw::tools::TrialReport tr = pw::tools::run_trials(*a.measured_model, profile, cluster, a.req, out.candidates,
                                                            a.trials, a.trial_band, a.trial_seconds);
    if (tr.chosen < 0) return out.plan;
    records.trials = pw::Json::array();
    for (const auto& e : tr.entries)
      records.trials.push_back({{"configuration", pw::tools::describe_configuration(e.plan)},
                                {"threads_per_stage", e.candidate.threads_per_stage},
                                {"stages", e.plan.num_stages()},
                                {"micro_batches", e.plan.num_micro_batches},
                                {"predicted_ms", e.plan.predicted.iteration_time_s * 1e3},
                                {"measured_ms", e.measured_ms},
                                {"median_ms", pw::models::median_of(e.measured_ms)}});
    const pw::planner::Plan& chosen = tr.entries[tr.chosen].plan;
    std::fprintf(stderr, "trials: chose %s (median %.3f ms; predicted fastest: %s; %d rounds, %s)\n",
                 pw::tools::describe_configuration(chosen).c_str(),
                 pw::models::median_of(tr.entries[tr.chosen].measured_ms),
                 pw::tools::describe_configuration(tr.entries[0].plan).c_str(), tr.rounds,
                 tr.settled ? "settled" : "a near tie when they ended");
    return chosen;
  };
}
#endif

// The plan carries what it was made from, so simulate --plan / run --plan reproduce it alone.
void record_inputs(pw::planner::Plan& plan, const PlanArgs& a, const pw::models::Profile& profile,
                   const pw::models::Cluster& cluster, const TrialRecords& records) {
  pw::planner::set_plan_inputs(plan, profile, cluster, /*embed=*/true);
  plan.inputs.model = a.model_json;
  plan.inputs.options = {{"dtype", a.dtype_used},
                         {"optimizer", a.req.optimizer},
                         {"efficiency", a.efficiency},
                         {"batch", a.req.batch},
                         {"micro_batches", pw::planner::micro_batches_to_string(a.req.micro_batches)},
                         {"schedule", pw::planner::to_string(a.req.schedule)},
                         {"objective", pw::planner::to_string(a.req.objective)},
                         {"recompute", pw::planner::to_string(a.req.recompute)},
                         {"partitioner", pw::planner::to_string(a.req.partitioner)},
                         {"memory_limit_bytes", a.req.memory_limit_bytes},
                         {"measured_here", a.measure}};
  if (a.req.schedule == pw::planner::ScheduleKind::interleaved_1f1b) plan.inputs.options["chunks"] = plan.chunks;
  if (!records.trials.is_null()) plan.inputs.options["trials"] = records.trials;
  if (!records.candidates.is_null()) plan.inputs.options["candidates"] = records.candidates;
}

void run(PlanArgs a, const CLI::App& sub) {
  check_flags(a, sub);
  const pw::planner::PlanFormat format =
      a.format.empty() ? pw::planner::PlanFormat::torch : pw::planner::parse_plan_format(a.format, "--format");
  const auto [profile, cluster] = load_inputs(a, sub);
  TrialRecords records;
  pw::sim::PlanningOptions options;
#ifdef PW_HAVE_EXEC
  const bool closed_form = a.req.schedule != pw::planner::ScheduleKind::zb_h2 &&
                           a.req.schedule != pw::planner::ScheduleKind::interleaved_1f1b;
  if (a.measure && a.req.objective == pw::planner::Objective::sync && closed_form)
    options.choose = trial_chooser(a, profile, cluster, records);
#endif
  pw::planner::PlanOutcome out = pw::sim::plan_with_prediction(profile, cluster, a.req, options);
  if (!out.feasible) throw_infeasible(out, a, cluster);
  pw::planner::Plan& plan = out.plan;
  record_inputs(plan, a, profile, cluster, records);
  pw::planner::check_plan_reads_back(plan);
  if (!a.format.empty()) std::cout << pw::planner::format_plan_for(plan, profile, format);
  else if (a.json) std::cout << pw::Json(plan).dump(2) << "\n";
  else std::cout << pw::planner::format_plan_table(plan);
  if (!a.output.empty()) pw::planner::save_plan_file(a.output, plan);
}

pw::tools::CommandRegistrar register_plan("plan", [](CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  auto* sub = app.add_subcommand("plan", "Partition a model into pipeline stages over a cluster (optimal DP)");
  sub->add_option("--profile", a->profile, "a profile JSON (pipewright.profile/1) or a PipeDream graph.txt");
  sub->add_option("--model", a->model, "a zoo model or model JSON (with --device: analytic profile)");
  sub->add_option("--device", a->device, "catalog device for --model, and the device of --devices/--levels");
  pw::tools::add_cluster_options(sub, a->cl);
  sub->add_option("--dtype", a->dtype, "fp32 | bf16 analytic costs (default: bf16 on an accelerator, fp32 on a CPU)");
  sub->add_flag("--bf16", a->bf16, "same as --dtype bf16");
  sub->add_option("--efficiency", a->efficiency, pw::tools::kEfficiencyHelp)->capture_default_str();
  sub->add_option("--batch", a->req.batch, "samples per mini-batch (default: the profile's)");
  sub->add_option("--micro-batches", a->choice.micro_batches, "auto or a count")->capture_default_str();
  sub->add_option("--schedule", a->choice.schedule,
                  "auto | gpipe | 1f1b | zb-h1 | zb-h2 | interleaved-1f1b | pipedream-async")
      ->capture_default_str();
  sub->add_option("--chunks", a->req.chunks, "interleaved-1f1b: virtual stages per device (default 2)");
  sub->add_option("--objective", a->choice.objective, "sync | async | pipedream (PipeDream's exact cost model)")
      ->capture_default_str();
  sub->add_option("--partitioner", a->choice.partitioner, "dp | gpipe-greedy | even")->capture_default_str();
  sub->add_option("--recompute", a->choice.recompute, "auto | on | off")->capture_default_str();
  sub->add_option("--optimizer", a->req.optimizer,
                  "sgd | sgd-momentum | rmsprop | adam | adam-mixed (under bf16, adam is priced as adam-mixed)")
      ->capture_default_str();
  sub->add_option(
      "--memory-limit", a->req.memory_limit_bytes,
      "bytes per device (sync/async: default the device memory; pipedream: its -s, enables the constraint)");
  sub->add_flag("--straight", a->req.straight, "no replication (PipeDream's --straight_pipeline)");
  sub->add_flag("--fewer-devices", a->req.fewer_devices, "allow idle devices (PipeDream's --use_fewer_machines)");
  sub->add_flag("--activation-comm", a->req.activation_comm,
                "pipedream objective: count inter-stage traffic (PipeDream's --activation_compression_ratio 1)");
  sub->add_flag("--measure", a->measure,
                "measure --model on this machine (sizes x 1 and all threads, co-run) and plan for this machine");
  sub->add_option("--trials", a->trials,
                  "--measure: at least this many rounds of trial runs of the plans predicted within --trial-band of "
                  "the fastest, the fastest median kept (0: choose by prediction alone)")
      ->capture_default_str();
  sub->add_option("--trial-seconds", a->trial_seconds,
                  "--measure: more trial rounds (up to 12) while the fastest medians are within 3% and the trials "
                  "have taken less than this (0: exactly --trials rounds)")
      ->capture_default_str();
  sub->add_option("--trial-band", a->trial_band,
                  "--measure: which plans are near ties: predicted within this fraction of the fastest (at most " +
                      std::to_string(pw::tools::kTrialMaxPlans) + " run)")
      ->capture_default_str();
  sub->add_flag("--json", a->json, "print the plan JSON instead of a table");
  sub->add_option("--format", a->format, "print the plan for megatron | deepspeed | torch instead of a table");
  sub->add_option("-o,--output", a->output, "write the plan (pipewright.plan/1) to this file");
  pw::tools::add_zoo_size_options(sub, a->zoo, pw::models::ZooOptions{});
  sub->callback([a, sub] { pw::run_with_output("-o", a->output, [&] { run(*a, *sub); }); });
});

}  // namespace
