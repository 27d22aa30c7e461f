#include "planner/plan.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "models/cluster.h"
#include "models/error.h"
#include "models/limits.h"

namespace pw::planner {

namespace lim = models::limits;
using models::get_limited;
using models::get_limited_int;
using models::get_limited_int_or;
using models::get_limited_or;

namespace {

constexpr models::RealLimit kMilliseconds{0, lim::kSeconds.max * 1e3};

void check_string_field(const Json& o, const char* key, const std::string& path) {
  if (o.contains(key)) get_string(o, key, path);
}

// plan --measure's record of one candidate or trial (inputs/options/candidates, .../trials).
void check_trial_record(const Json& r, const std::string& at) {
  require_object(r, at);
  get_limited_or(r, "stages", at, 1, lim::kStages);
  get_limited_or(r, "threads_per_stage", at, 0, lim::kThreads);
  get_limited_or(r, "micro_batches", at, 1, lim::kMicroBatches);
  get_limited_or(r, "micro_batch_size", at, 1, lim::kMicroBatchSize);
  models::get_real_limited_or(r, "predicted_ms", at, 0, kMilliseconds);
  models::get_real_limited_or(r, "median_ms", at, 0, kMilliseconds);
  check_string_field(r, "configuration", at);
  if (r.contains("measured_ms")) {
    const Json& ms = require_array(r, "measured_ms", at);
    for (size_t k = 0; k < ms.size(); ++k) {
      const std::string where = join_path(join_path(at, "measured_ms"), k);
      if (!ms[k].is_number()) throw InputError(where + ": expected a number, got " + json_type_name(ms[k]));
      models::check_real_limit(ms[k].get<double>(), kMilliseconds, where);
    }
  }
}

// What `plan` recorded of its flags (inputs/options): the same ranges as those flags. The plan's
// own fields, not these, drive simulate and run; the record is checked so that a plan file holds
// nothing a flag would refuse. Keys this version does not know are left alone.
void check_recorded_options(const Json& o) {
  const std::string at = "/inputs/options";
  models::get_real_limited_or(o, "efficiency", at, lim::kEfficiency.max, lim::kEfficiency);
  get_limited_or(o, "batch", at, 0, {0, lim::kBatch.max});  // 0: the profile's batch
  get_limited_or(o, "memory_limit_bytes", at, 0, lim::kBytes);
  get_limited_or(o, "chunks", at, 1, lim::kChunks);
  for (const char* key : {"dtype", "optimizer", "micro_batches", "schedule", "objective", "recompute", "partitioner"})
    check_string_field(o, key, at);
  get_bool_or(o, "measured_here", at, false);
  for (const char* key : {"candidates", "trials"}) {
    if (!o.contains(key)) continue;
    const Json& list = require_array(o, key, at);
    for (size_t k = 0; k < list.size(); ++k) check_trial_record(list[k], join_path(join_path(at, key), k));
  }
}

}  // namespace

void check_plan_batch(const Plan& p) {
  const std::string sizes = " (micro_batch_size " + std::to_string(p.micro_batch_size) + " x num_micro_batches " +
                            std::to_string(p.num_micro_batches) + " = " +
                            std::to_string(p.micro_batch_size * p.num_micro_batches) + ")";
  if (p.remainder_rule == "none") {
    if (p.batch != p.micro_batch_size * p.num_micro_batches)
      throw InputError("/batch: " + std::to_string(p.batch) + " is not micro_batch_size x num_micro_batches" + sizes +
                       " with remainder_rule \"none\"");
  } else if (p.remainder_rule == "last-smaller") {
    if (p.batch >= p.micro_batch_size * p.num_micro_batches ||
        p.batch <= p.micro_batch_size * (p.num_micro_batches - 1))
      throw InputError("/batch: " + std::to_string(p.batch) +
                       " does not leave a smaller last micro-batch (remainder_rule \"last-smaller\")" + sizes);
  } else {
    throw InputError("/remainder_rule: expected \"none\" or \"last-smaller\", got \"" + p.remainder_rule + "\"");
  }
}

void check_stage_devices(const Plan& p) {
  if (p.chunks > 1) {
    // Interleaved: virtual stage k runs on pipeline device k mod (stages / chunks), so the
    // stages must split into `chunks` whole rounds of the pipeline.
    if (p.num_stages() % p.chunks != 0)
      throw InputError("/chunks: " + std::to_string(p.chunks) + " chunks per device do not divide the plan's " +
                       std::to_string(p.num_stages()) + " stages");
    const int pipeline = p.num_stages() / p.chunks;
    for (int k = pipeline; k < p.num_stages(); ++k)
      if (p.stages[k].devices != p.stages[k % pipeline].devices)
        throw InputError("/stages/" + std::to_string(k) + "/devices: with chunks = " + std::to_string(p.chunks) +
                         ", expected the devices of stage " + std::to_string(k % pipeline));
    return;
  }
  std::map<int, int> stage_of;
  for (int k = 0; k < p.num_stages(); ++k)
    for (int d : p.stages[k].devices) {
      auto [it, fresh] = stage_of.emplace(d, k);
      if (!fresh)
        throw InputError("/stages/" + std::to_string(k) + "/devices: device " + std::to_string(d) + " is also stage " +
                         std::to_string(it->second) + "'s (a device runs one stage)");
    }
}

void check_plan_on_cluster(const Plan& p, int cluster_devices, const std::string& cluster_name) {
  const int k = std::max(1, p.threads_per_stage);
  for (int s = 0; s < p.num_stages(); ++s)
    for (size_t i = 0; i < p.stages[s].devices.size(); ++i) {
      const int64_t last = static_cast<int64_t>(p.stages[s].devices[i]) + k - 1;
      if (last >= cluster_devices)
        throw InputError("/stages/" + std::to_string(s) + "/devices/" + std::to_string(i) + ": device " +
                         std::to_string(p.stages[s].devices[i]) +
                         (k > 1 ? " with threads_per_stage " + std::to_string(k) : std::string()) + " is not in " +
                         cluster_name + " (" + std::to_string(cluster_devices) + " devices, 0.." +
                         std::to_string(cluster_devices - 1) + ")");
    }
}

std::string content_hash(const Json& j) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : j.dump()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void set_plan_inputs(Plan& plan, Json profile, Json cluster, bool embed) {
  plan.profile_hash = content_hash(profile);
  plan.cluster_hash = content_hash(cluster);
  if (!embed) return;
  plan.inputs.profile = std::move(profile);
  plan.inputs.cluster = std::move(cluster);
}

void to_json(Json& j, const Plan& p) {
  Json stages = Json::array();
  for (const StagePlan& s : p.stages) {
    const StagePrediction& q = s.predicted;
    stages.push_back({{"first_layer", s.first_layer},
                      {"end_layer", s.end_layer},
                      {"layers", s.layer_names},
                      {"devices", s.devices},
                      {"replicas", s.replicas()},
                      {"recompute", s.recompute},
                      {"predicted",
                       {{"forward_ns", q.forward_ns},
                        {"backward_ns", q.backward_ns},
                        {"comm_ns", q.comm_ns},
                        {"allreduce_ns", q.allreduce_ns},
                        {"memory_bytes", q.memory_bytes},
                        {"weights_optimizer_bytes", q.weights_optimizer_bytes},
                        {"activation_bytes", q.activation_bytes}}}});
  }
  const PlanPrediction& q = p.predicted;
  j = Json{{"format", format_tag("plan", 1)},
           {"model", p.model},
           {"profile_hash", p.profile_hash},
           {"cluster", {{"name", p.cluster_name}, {"hash", p.cluster_hash}}},
           {"objective", p.objective},
           {"partitioner", p.partitioner},
           {"schedule", std::string(to_string(p.schedule))},
           {"chunks", p.chunks},
           {"batch", p.batch},
           {"micro_batch_size", p.micro_batch_size},
           {"num_micro_batches", p.num_micro_batches},
           {"remainder_rule", p.remainder_rule},
           {"num_devices_used", p.num_devices_used},
           {"stages", stages},
           {"predicted",
            {{"iteration_time_s", q.iteration_time_s},
             {"bottleneck_time_s", q.bottleneck_time_s},
             {"throughput_samples_per_s", q.throughput_samples_per_s},
             {"bubble_rate", q.bubble_rate},
             {"schedule_bubble", q.schedule_bubble},
             {"stage_imbalance", q.stage_imbalance},
             {"idle_share", q.idle_share},
             {"peak_memory_bytes", q.peak_memory_bytes}}}};
  j["cut_family"] = p.cut_family;
  if (!p.layer_order.empty()) j["layer_order"] = p.layer_order;
  if (p.threads_per_stage > 0) j["threads_per_stage"] = p.threads_per_stage;
  if (p.extrapolated) {
    j["extrapolated"] = true;
    j["extrapolation_note"] = p.extrapolation_note;
  }
  if (p.predicted_step_ns > 0) j["predicted_step_ns"] = p.predicted_step_ns;
  if (!p.inputs.empty()) {
    Json in = Json::object();
    if (!p.inputs.profile.is_null()) in["profile"] = p.inputs.profile;
    if (!p.inputs.cluster.is_null()) in["cluster"] = p.inputs.cluster;
    if (!p.inputs.model.is_null()) in["model"] = p.inputs.model;
    if (!p.inputs.options.is_null()) in["options"] = p.inputs.options;
    j["inputs"] = std::move(in);
  }
}

Plan plan_from_json(const Json& j) {
  require_object(j, "");
  check_format(j, "plan", 1, "");
  Plan p;
  p.model = get_string(j, "model", "");
  p.profile_hash = get_string_or(j, "profile_hash", "", "");
  if (j.contains("cluster")) {
    const Json& c = require_object(j["cluster"], "/cluster");
    p.cluster_name = get_string_or(c, "name", "/cluster", "");
    p.cluster_hash = get_string_or(c, "hash", "/cluster", "");
  }
  p.objective = get_string_or(j, "objective", "", "sync");
  if (p.objective != "sync" && p.objective != "pipedream" && p.objective != "async")
    throw InputError("/objective: expected \"sync\", \"async\" or \"pipedream\", got \"" + p.objective + "\"");
  p.partitioner = get_string_or(j, "partitioner", "", "dp");
  p.schedule = parse_schedule_kind(get_string(j, "schedule", ""), "/schedule");
  p.chunks = get_limited_int_or(j, "chunks", "", 1, lim::kChunks);
  p.batch = get_limited(j, "batch", "", lim::kBatch);
  p.micro_batch_size = get_limited(j, "micro_batch_size", "", lim::kMicroBatchSize);
  p.num_micro_batches = get_limited_int(j, "num_micro_batches", "", lim::kMicroBatches);
  p.remainder_rule = get_string_or(j, "remainder_rule", "", "none");
  p.cut_family = get_string_or(j, "cut_family", "", "topological-order");
  p.threads_per_stage = get_limited_int_or(j, "threads_per_stage", "", 0, lim::kThreads);
  p.extrapolated = get_bool_or(j, "extrapolated", "", false);
  p.extrapolation_note = get_string_or(j, "extrapolation_note", "", "");
  p.predicted_step_ns = get_limited_or(j, "predicted_step_ns", "", 0, lim::kDurationNs);
  if (j.contains("inputs")) {
    // Documents are checked where they are used (their own readers); here only that each is
    // an object and that the embedded profile and cluster are the ones the hashes name.
    const Json& in = require_object(j["inputs"], "/inputs");
    for (const auto& [key, doc] : in.items()) {
      if (key != "profile" && key != "cluster" && key != "model" && key != "options")
        throw InputError("/inputs/" + key + ": unknown input (expected profile, cluster, model, options)");
      require_object(doc, "/inputs/" + key);
    }
    if (in.contains("profile") && !p.profile_hash.empty() && content_hash(in["profile"]) != p.profile_hash)
      throw InputError("/inputs/profile: its content hash " + content_hash(in["profile"]) +
                       " is not the plan's profile_hash " + p.profile_hash + " (edited after planning?)");
    if (in.contains("cluster") && !p.cluster_hash.empty() && content_hash(in["cluster"]) != p.cluster_hash)
      throw InputError("/inputs/cluster: its content hash " + content_hash(in["cluster"]) +
                       " is not the plan's cluster hash " + p.cluster_hash + " (edited after planning?)");
    if (in.contains("profile")) p.inputs.profile = in["profile"];
    if (in.contains("cluster")) p.inputs.cluster = in["cluster"];
    if (in.contains("model")) p.inputs.model = in["model"];
    if (in.contains("options")) {
      check_recorded_options(in["options"]);
      p.inputs.options = in["options"];
    }
  }
  if (j.contains("layer_order")) {
    const Json& lo = require_array(j, "layer_order", "");
    if (static_cast<int64_t>(lo.size()) > lim::kLayers.max)
      throw InputError("/layer_order: more than " + std::to_string(lim::kLayers.max) + " layers");
    for (size_t k = 0; k < lo.size(); ++k)
      p.layer_order.push_back(
          static_cast<int>(models::limited_value(lo[k], join_path("/layer_order", k), {0, lim::kLayers.max - 1})));
  }
  check_plan_batch(p);
  const Json& arr = require_array(j, "stages", "");
  if (arr.empty()) throw InputError("/stages: the plan has no stages");
  if (static_cast<int64_t>(arr.size()) > lim::kStages.max)
    throw InputError("/stages: more than " + std::to_string(lim::kStages.max) + " stages");
  int expect_first = 0;
  int max_device = -1;
  for (size_t k = 0; k < arr.size(); ++k) {
    const std::string at = join_path("/stages", k);
    const Json& sj = require_object(arr[k], at);
    StagePlan s;
    s.first_layer = get_limited_int(sj, "first_layer", at, {0, lim::kLayers.max - 1});
    s.end_layer = get_limited_int(sj, "end_layer", at, {1, lim::kLayers.max});
    if (s.first_layer != expect_first)
      throw InputError(at + "/first_layer: expected " + std::to_string(expect_first) +
                       " (stages must cover the layers contiguously), got " + std::to_string(s.first_layer));
    if (s.end_layer <= s.first_layer) throw InputError(at + "/end_layer: a stage needs at least one layer");
    expect_first = s.end_layer;
    if (sj.contains("layers")) {
      const Json& names = require_array(sj, "layers", at);
      for (size_t i = 0; i < names.size(); ++i) {
        if (!names[i].is_string())
          throw InputError(join_path(at, "layers") + "/" + std::to_string(i) + ": expected a string");
        s.layer_names.push_back(names[i].get<std::string>());
      }
      // An empty list is what to_json writes for a plan read without names: names not given.
      if (!s.layer_names.empty() && static_cast<int>(s.layer_names.size()) != s.end_layer - s.first_layer)
        throw InputError(join_path(at, "layers") + ": expected " + std::to_string(s.end_layer - s.first_layer) +
                         " names");
    }
    const Json& devs = require_array(sj, "devices", at);
    if (devs.empty()) throw InputError(join_path(at, "devices") + ": a stage needs at least one device");
    if (static_cast<int64_t>(devs.size()) > lim::kDevices.max)
      throw InputError(join_path(at, "devices") + ": more than " + std::to_string(lim::kDevices.max) + " devices");
    std::set<int> distinct;
    for (size_t i = 0; i < devs.size(); ++i) {
      const std::string di = join_path(join_path(at, "devices"), i);
      const int d = static_cast<int>(models::limited_value(devs[i], di, {0, lim::kDevices.max - 1}));
      if (!distinct.insert(d).second)
        throw InputError(di + ": device " + std::to_string(d) + " appears twice in the stage");
      s.devices.push_back(d);
      max_device = std::max(max_device, d);
    }
    if (sj.contains("replicas")) {
      const int64_t r = get_limited(sj, "replicas", at, lim::kDevices);
      if (r != s.replicas())
        throw InputError(join_path(at, "replicas") + ": " + std::to_string(r) + ", but the stage lists " +
                         std::to_string(s.replicas()) + " device" + (s.replicas() == 1 ? "" : "s") +
                         " (a replica per device)");
    }
    s.recompute = get_bool_or(sj, "recompute", at, false);
    if (sj.contains("predicted")) {
      const Json& q = require_object(sj["predicted"], join_path(at, "predicted"));
      const std::string qt = join_path(at, "predicted");
      s.predicted.forward_ns = get_limited_or(q, "forward_ns", qt, 0, lim::kDurationNs);
      s.predicted.backward_ns = get_limited_or(q, "backward_ns", qt, 0, lim::kDurationNs);
      s.predicted.comm_ns = get_limited_or(q, "comm_ns", qt, 0, lim::kDurationNs);
      s.predicted.allreduce_ns = get_limited_or(q, "allreduce_ns", qt, 0, lim::kDurationNs);
      s.predicted.memory_bytes = get_limited_or(q, "memory_bytes", qt, 0, lim::kBytes);
      s.predicted.weights_optimizer_bytes = get_limited_or(q, "weights_optimizer_bytes", qt, 0, lim::kBytes);
      s.predicted.activation_bytes = get_limited_or(q, "activation_bytes", qt, 0, lim::kBytes);
    }
    p.stages.push_back(std::move(s));
  }
  p.num_devices_used = get_limited_int_or(j, "num_devices_used", "", max_device + 1, lim::kDevices);
  check_stage_devices(p);
  if (!p.inputs.cluster.is_null()) {
    // The cluster the plan was made for: its devices are the ones the stages may name.
    models::Cluster cluster = [&] {
      try {
        return models::cluster_from_json(p.inputs.cluster);
      } catch (const InputError& e) {
        const std::string what = e.what();
        throw InputError("/inputs/cluster" + (what.rfind('/', 0) == 0 ? "" : std::string(": ")) + what);
      }
    }();
    check_plan_on_cluster(p, cluster.num_devices(), "its cluster \"" + cluster.name() + "\"");
  }
  if (j.contains("predicted")) {
    const Json& q = require_object(j["predicted"], "/predicted");
    using models::get_real_limited_or;
    p.predicted.iteration_time_s = get_real_limited_or(q, "iteration_time_s", "/predicted", 0, lim::kSeconds);
    p.predicted.bottleneck_time_s = get_real_limited_or(q, "bottleneck_time_s", "/predicted", 0, lim::kSeconds);
    p.predicted.throughput_samples_per_s =
        get_real_limited_or(q, "throughput_samples_per_s", "/predicted", 0, lim::kSampleRate);
    p.predicted.bubble_rate = get_real_limited_or(q, "bubble_rate", "/predicted", 0, lim::kShare);
    p.predicted.peak_memory_bytes = get_limited_or(q, "peak_memory_bytes", "/predicted", 0, lim::kBytes);
    p.predicted.schedule_bubble = get_real_limited_or(q, "schedule_bubble", "/predicted", 0, lim::kShare);
    p.predicted.stage_imbalance = get_real_limited_or(q, "stage_imbalance", "/predicted", 0, lim::kShare);
    p.predicted.idle_share = get_real_limited_or(q, "idle_share", "/predicted", 0, lim::kShare);
  }
  return p;
}

Plan load_plan_file(const std::string& file) { return parse_json_file<Plan>(file, plan_from_json); }

void check_plan_reads_back(const Plan& p) {
  try {
    (void)plan_from_json(Json(p));
  } catch (const InputError& e) {
    throw InputError(std::string("the plan for these inputs holds a value no plan file may hold (") + e.what() + ")");
  }
}

void save_plan_file(const std::string& file, const Plan& p) {
  check_plan_reads_back(p);
  Json j = p;
  save_json_file(file, j);
}

}  // namespace pw::planner
