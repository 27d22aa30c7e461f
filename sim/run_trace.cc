#include "sim/run_trace.h"

#include <algorithm>
#include <limits>

#include "models/error.h"
#include "models/limits.h"
#include "sim/trace_io.h"

namespace pw::sim {

namespace lim = models::limits;
using models::get_limited;
using models::get_limited_int;
using models::get_limited_int_or;
using models::get_limited_or;

void keep_last_iterations(RunTrace& r, int keep) {
  TrimmedTrace t = trim_trace(r.trace, keep);
  r.iterations = std::move(t.iterations);
  r.trace = std::move(t.trace);
}

int replay_first_iteration(const RunTrace& r) {
  int first_kept = std::numeric_limits<int>::max();
  for (const TraceEvent& e : r.trace.events) first_kept = std::min(first_kept, e.iteration);
  if (r.trace.events.empty()) first_kept = 0;
  return std::max(r.warmup_iterations, first_kept);
}

namespace {

std::vector<IterationSummary> summaries_from_json(const Json& j) {
  const Json& a = require_array(j, "iterations", "");
  std::vector<IterationSummary> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string path = join_path("/iterations", i);
    require_object(a[i], path);
    IterationSummary s;
    s.iteration = get_limited_int(a[i], "iteration", path, {0, std::numeric_limits<int>::max()});
    s.start_ns = get_limited(a[i], "start_ns", path, lim::kTimestampNs);
    s.end_ns = get_limited(a[i], "end_ns", path, {s.start_ns, lim::kTimestampNs.max});
    if (!out.empty() && s.iteration <= out.back().iteration)
      throw InputError(join_path(path, "iteration") + ": expected iterations in ascending order, got " +
                       std::to_string(s.iteration) + " after " + std::to_string(out.back().iteration));
    out.push_back(s);
  }
  return out;
}

}  // namespace

Json run_trace_to_json(const RunTrace& r) {
  Json j{{"format", format_tag("run-trace", 1)},
         {"schedule", std::string(planner::to_string(r.schedule))},
         {"stages", r.stages},
         {"chunks", r.chunks},
         {"micro_batches", r.micro_batches},
         {"warmup_iterations", r.warmup_iterations}};
  if (r.has_predicted)
    j["predicted"] = {{"forward_ns", r.predicted.forward_ns},
                      {"backward_input_ns", r.predicted.backward_input_ns},
                      {"backward_weight_ns", r.predicted.backward_weight_ns},
                      {"step_ns", r.predicted.step_ns}};
  if (r.has_predicted && !r.predicted.data_ns.empty()) j["predicted"]["data_ns"] = r.predicted.data_ns;
  if (r.handoff_ns > 0) j["handoff_ns"] = r.handoff_ns;
  if (!r.iterations.empty()) {
    Json a = Json::array();
    for (const IterationSummary& s : r.iterations)
      a.push_back({{"iteration", s.iteration}, {"start_ns", s.start_ns}, {"end_ns", s.end_ns}});
    j["iterations"] = std::move(a);
  }
  Json t;
  to_json(t, r.trace);
  j["trace"] = t;
  return j;
}

RunTrace run_trace_from_json(const Json& j) {
  require_object(j, "");
  check_format(j, "run-trace", 1, "");
  RunTrace r;
  r.schedule = planner::parse_schedule_kind(get_string(j, "schedule", ""), "/schedule");
  r.stages = get_limited_int(j, "stages", "", lim::kStages);
  r.chunks = get_limited_int_or(j, "chunks", "", 1, lim::kChunks);
  r.micro_batches = get_limited_int(j, "micro_batches", "", lim::kMicroBatches);
  if (r.stages % r.chunks != 0)
    throw InputError("/stages: " + std::to_string(r.stages) + " is not a multiple of /chunks (" +
                     std::to_string(r.chunks) + ")");
  models::check_schedule_size(r.stages, r.micro_batches, "/stages, /micro_batches");
  r.warmup_iterations = get_limited_int_or(j, "warmup_iterations", "", 0, lim::kWarmupSteps);
  r.handoff_ns = get_limited_or(j, "handoff_ns", "", 0, lim::kDurationNs);
  if (j.contains("predicted")) {
    const Json& p = require_field(j, "predicted", "");
    require_object(p, "/predicted");
    auto vec = [&](const char* key, size_t want) {
      const Json& a = require_array(p, key, "/predicted");
      std::vector<int64_t> v;
      if (a.size() > static_cast<size_t>(lim::kDevices.max))
        throw InputError(join_path("/predicted", key) + ": more than " + std::to_string(lim::kDevices.max) +
                         " entries");
      for (size_t i = 0; i < a.size(); ++i)
        v.push_back(models::limited_value(a[i], join_path(join_path("/predicted", key), i), lim::kDurationNs));
      if (want > 0 && v.size() != want)
        throw InputError(join_path("/predicted", key) + ": expected " + std::to_string(want) + " entries");
      return v;
    };
    r.predicted = StageCosts::uniform(r.stages, 0, 0, 0);
    r.predicted.forward_ns = vec("forward_ns", r.stages);
    r.predicted.backward_input_ns = vec("backward_input_ns", r.stages);
    r.predicted.backward_weight_ns = vec("backward_weight_ns", r.stages);
    r.predicted.step_ns = vec("step_ns", 0);
    if (p.contains("data_ns")) r.predicted.data_ns = vec("data_ns", 0);
    r.has_predicted = true;
  }
  if (j.contains("iterations")) r.iterations = summaries_from_json(j);
  try {
    r.trace = trace_from_json(require_field(j, "trace", ""));
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(what.rfind('/', 0) == 0 ? "/trace" + what : what);
  }
  return r;
}

}  // namespace pw::sim
