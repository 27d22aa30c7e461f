// Profile: per-layer cost of one micro-batch on one device, plus the layer DAG's edges so
// that cut costs (every tensor crossing a stage boundary) can be computed.
//
// Units are in field names: times in integer nanoseconds, sizes in bytes. All values are for
// the whole micro-batch of `micro_batch` samples (PipeDream profiles: the whole mini-batch
// they were measured at). Backward time is split into the input-gradient part (B) and the
// weight-gradient part (W); a source that only loads data has is_data_loading = true and its
// forward_ns is loading time, not compute (planners ignore it as compute).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/json_util.h"
#include "models/layer_graph.h"

namespace pw::models {

struct LayerProfile {
  std::string name;
  std::string kind;  // a LayerKind name, or a free description for imported layers
  int64_t forward_ns = 0;
  int64_t backward_input_ns = 0;   // B: gradient w.r.t. the layer's inputs
  int64_t backward_weight_ns = 0;  // W: gradient w.r.t. the layer's parameters
  int64_t output_bytes = 0;        // the layer's output activation (what a cut after it sends)
  int64_t stash_bytes = 0;         // bytes kept from forward until backward (incl. output if needed)
  int64_t parameter_bytes = 0;
  // Per-parameter memory beyond the weights and one same-size gradient buffer: optimizer state
  // (moments, fp32 master copies) and any extra gradient precision. Weights + gradients + state
  // = 2 * parameter_bytes + optimizer_bytes (models/optimizer_memory.h). 0 if unknown.
  int64_t optimizer_bytes = 0;
  int64_t workspace_bytes = 0;  // transient bytes while the layer runs (not kept)
  // Held from a split input-gradient step (B) until its weight-gradient step (W), beyond
  // stash_bytes (e.g. output gradients W needs). Zero-bubble schedules hold it for every
  // micro-batch whose W is delayed; fused backward (BW) never holds it. 0 when unknown.
  int64_t weight_pending_bytes = 0;
  bool is_data_loading = false;  // an input source: forward_ns is data-loading time
  // Per iteration (not per micro-batch): the optimizer step over this layer's parameters plus
  // zeroing its gradients, as the runtime does once per synchronous iteration. 0 when unknown
  // (analytic and imported profiles, and profiles written before the field existed).
  int64_t step_ns = 0;
  std::string module;  // LayerSpec::module: a framework's name for a split just before this layer

  int64_t backward_ns() const { return backward_input_ns + backward_weight_ns; }
  int64_t compute_ns() const { return is_data_loading ? 0 : forward_ns + backward_ns(); }
};

// Where the numbers came from.
struct ProfileDevice {
  std::string name;  // catalog name ("a100-80g") or a description of the measured CPU
  int cores = 0;     // 0 when not applicable
  int threads = 0;
};

// How a measured profile was taken (DESIGN.md, "Fidelity"). Absent (std::nullopt) for analytic
// and imported profiles and for measured profiles written before the field existed.
struct ProfileMeasurement {
  // "in-context": layers timed inside real forward/backward passes in training order (fresh
  // activations each pass, the model's weights, gradients and optimizer state live);
  // "isolated": each layer alone in a loop on the same input.
  std::string context = "isolated";
  // Copies of the pass that ran at the same time, each pinned to its own cores (1 = alone).
  // > 1 puts the memory-bandwidth contention of a pipeline's concurrent workers in the numbers.
  int co_run_workers = 1;
  int reps = 0;  // timed passes (medians over them, and over the co-running copies)
};

// Per-layer times at one (micro-batch size, threads) point of a measured profile.
struct PointTimes {
  int64_t forward_ns = 0, backward_input_ns = 0, backward_weight_ns = 0, step_ns = 0;
};
struct ProfilePoint {
  int64_t micro_batch = 1;
  int threads = 1;  // OpenMP threads of the copy that measured it
  int co_run_workers = 1;
  std::vector<PointTimes> layers;  // same order and size as Profile::layers
};

struct Profile {
  std::string model;   // model name
  std::string source;  // "analytic", "measured" or "pipedream"
  ProfileDevice device;
  int64_t micro_batch = 1;           // samples the per-layer numbers hold for
  std::vector<LayerProfile> layers;  // a topological order
  std::vector<Edge> edges;           // data dependencies (indices into layers)
  // Optional (pipewright.profile/1 reads without them): how it was measured, and times at more
  // (micro-batch, threads) points than the one `layers` holds (models/profile_points.h).
  std::optional<ProfileMeasurement> measurement;
  std::vector<ProfilePoint> points;

  int64_t total_forward_ns() const;  // excludes data-loading sources
  int64_t total_backward_ns() const;
  int64_t total_parameter_bytes() const;
  int index_of(const std::string& name) const;  // -1 if absent
};

// Where a pipeline stage may begin, per layer (size layers.size()): everywhere when no layer
// carries a module path (the zoo's models, PipeDream profiles); otherwise, since a framework
// names a split by the submodule whose call begins there (torch.distributed.pipelining's
// split points), only at the first layer and at layers with a module path.
std::vector<bool> stage_starts_allowed(const Profile& p);

// Checks the invariants the planner relies on: non-empty, unique names, edge indices in range,
// edges go forward in the layer order (from < to); micro_batch within limits::kMicroBatchSize;
// every time within limits::kDurationNs and every size within limits::kBytes, per layer and
// summed over the layers (so that a stage's sums, and the totals, stay far inside int64, and
// every profile the tool makes reads back). Throws InputError naming what is wrong.
void validate_profile(const Profile& p, const std::string& what);

void to_json(Json& j, const LayerProfile& l);
void to_json(Json& j, const Profile& p);
// {"format": "pipewright.profile/1", ...}; rejects negative or non-finite numbers.
Profile profile_from_json(const Json& j);
Profile load_profile_file(const std::string& file);
void save_profile_file(const std::string& file, const Profile& p);

}  // namespace pw::models
