// Plan: the planner's answer, the input of `simulate` and `run`.
//
// Stages are contiguous ranges [first_layer, end_layer) of the profile's layer order (which is
// a topological order of the model DAG). Each stage runs on `devices` (its replicas, data
// parallel inside the stage). The mini-batch of `batch` samples is split into
// `num_micro_batches` micro-batches of `micro_batch_size` samples (the last may be smaller
// when the batch does not divide; see `remainder_rule`).
//
// `predicted` holds the metrics that justified the plan under the planner's cost model.
// Times in the JSON are seconds (`_s`) or nanoseconds (`_ns`), sizes bytes (`_bytes`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/json_util.h"
#include "planner/schedule.h"

namespace pw::planner {

struct StagePrediction {
  int64_t forward_ns = 0;               // per micro-batch, one replica
  int64_t backward_ns = 0;              // per micro-batch (B + W; with recompute, includes the re-forward)
  int64_t comm_ns = 0;                  // per micro-batch: input + output transfers
  int64_t allreduce_ns = 0;             // per mini-batch gradient all-reduce among replicas
  int64_t memory_bytes = 0;             // peak per device of this stage
  int64_t weights_optimizer_bytes = 0;  // weights + gradients + optimizer state
  int64_t activation_bytes = 0;         // stashed activations at peak
};

struct StagePlan {
  int first_layer = 0;  // index into the profile's layers
  int end_layer = 0;    // one past the last
  std::vector<std::string> layer_names;
  std::vector<int> devices;  // device ids in the cluster; size() == replicas
  bool recompute = false;    // re-materialize activations in backward
  StagePrediction predicted;

  int replicas() const { return static_cast<int>(devices.size()); }
};

struct PlanPrediction {
  double iteration_time_s = 0;   // one mini-batch (sync: fill + steady + drain)
  double bottleneck_time_s = 0;  // slowest stage's time per mini-batch (steady state)
  double throughput_samples_per_s = 0;
  // Kept for compatibility: (iteration - busy of the longest-span stage) / iteration (DESIGN.md;
  // sync: that stage is stage 0). It mixes the schedule's bubble with stage imbalance and
  // communication; the three figures below separate them (planner/plan_figures.h).
  double bubble_rate = 0;
  int64_t peak_memory_bytes = 0;  // largest over devices
  // Figures that rank plans (planner/plan_figures.h; optional in JSON, 0 in older plans):
  double schedule_bubble = 0;  // idle share the schedule causes with stage costs equalised
  double stage_imbalance = 0;  // 1 - mean device busy / max device busy
  double idle_share = 0;       // 1 - mean over devices of busy / iteration
};

struct Plan {
  std::string model;
  std::string profile_hash;  // content hash of the profile JSON (hex)
  std::string cluster_name;
  std::string cluster_hash;
  std::string objective = "sync";  // "sync", "async" (our replicated model) or "pipedream" (its exact model)
  std::string partitioner = "dp";  // "dp", "gpipe-greedy", "even"
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  int chunks = 1;     // virtual chunks per device (interleaved)
  int64_t batch = 1;  // samples per mini-batch
  int64_t micro_batch_size = 1;
  int num_micro_batches = 1;
  std::string remainder_rule = "none";  // "none" when batch == size*count, else how the rest is spread
  int num_devices_used = 0;
  std::vector<StagePlan> stages;
  PlanPrediction predicted;
  // Added by the partitioners (optional in JSON):
  std::string cut_family = "topological-order";  // or "pipedream-antichains", "topological-prefixes"
  // Empty: stage ranges index the profile's layer order. Otherwise a permutation of profile layer
  // indices (a topological order) that the ranges index; set when a PipeDream-antichain plan's
  // stages are not contiguous in the profile's order. Stage layer_names are authoritative.
  std::vector<int> layer_order;
  // Fidelity (optional in JSON). Cores (OpenMP threads) each stage's worker owns on a CPU; 0 =
  // unspecified (the runtime gives each worker its share of the cores). With k > 0, a stage
  // whose devices[0] is d runs on cores d .. d + k - 1 of the cluster.
  int threads_per_stage = 0;
  // The costs behind `predicted` were extrapolated beyond the profile's measured points
  // (models/profile_points.h); extrapolation_note says where. Not set for analytic profiles.
  bool extrapolated = false;
  std::string extrapolation_note;
  // Per-iteration time each stage's optimizer step takes (included in predicted iteration time).
  int64_t predicted_step_ns = 0;

  // The inputs the plan was made from, so that `simulate --plan` and `run --plan` reproduce it
  // alone (optional in JSON as "inputs"; `plan` embeds them in what it writes). JSON documents,
  // null when absent: the profile (pipewright.profile/1, hash == profile_hash), the cluster
  // (pipewright.cluster/1, hash == cluster_hash), the model when the plan was made from one
  // (pipewright.model/1), and the request's options (precision, optimizer, ...) for the record.
  struct Inputs {
    Json profile, cluster, model, options;
    bool empty() const { return profile.is_null() && cluster.is_null() && model.is_null() && options.is_null(); }
  } inputs;
  int num_stages() const { return static_cast<int>(stages.size()); }
};

// The plan's own consistency, checked by plan_from_json, so that every command reading a plan
// (`simulate`, `schedule export/import`, `run`, `whatif`) accepts and refuses the same ones:
// check_plan_batch: batch == micro_batch_size x num_micro_batches under remainder_rule "none";
// (m - 1) x size < batch < m x size under "last-smaller"; no other rule.
// check_stage_devices: with chunks = 1 no device runs two stages; with chunks v > 1 the stages
// are a multiple of v and virtual stage k runs on the devices of stage k mod (stages / v).
// InputError naming the JSON path.
void check_plan_batch(const Plan& p);
void check_stage_devices(const Plan& p);
// Every device of every stage (with threads_per_stage k > 1: devices d .. d + k - 1) is one of
// the `cluster_devices` devices of the cluster the plan is simulated or run on. InputError
// naming the stage's JSON path, the device and the cluster.
void check_plan_on_cluster(const Plan& p, int cluster_devices, const std::string& cluster_name);

void to_json(Json& j, const Plan& p);
// {"format": "pipewright.plan/1", ...}; checks stage ranges are contiguous and non-empty.
Plan plan_from_json(const Json& j);
Plan load_plan_file(const std::string& file);
// Throws InputError unless `p`, written as JSON, reads back with plan_from_json: a plan made from
// inputs this extreme (a micro-batch past limits::kMicroBatchSize, predictions past a plan
// file's limits) is refused with the value and its JSON path, never written. save_plan_file
// checks it; a command that prints a plan checks it before any output.
void check_plan_reads_back(const Plan& p);
void save_plan_file(const std::string& file, const Plan& p);

// FNV-1a 64-bit hash of a JSON value's compact dump, as 16 hex digits.
std::string content_hash(const Json& j);

// Records the profile and cluster a plan was made from: their content hashes (profile_hash,
// cluster_hash) and, when `embed`, the documents themselves in plan.inputs. make_plan leaves
// both to the caller, so that planning does not serialize its inputs.
void set_plan_inputs(Plan& plan, Json profile, Json cluster, bool embed);

}  // namespace pw::planner
