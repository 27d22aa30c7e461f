// Importer for PipeDream's profiler output (`graph.txt`, format described in
// third_party/pipedream-profiles/README.md) and its optimizer output (`gpus=N.txt`, which adds
// `-- stage_id=N` to node lines).
//
// Mapping to a Profile (source "pipedream"):
// - layer name = node id, kind = the node description verbatim;
// - forward_ns / backward_input_ns = forward_compute_time / backward_compute_time converted
//   from milliseconds to integer nanoseconds by exact decimal arithmetic ("233.902" ->
//   233902000; at most 6 decimals). PipeDream measures one backward time per module, so all of
//   it goes to backward_input_ns and backward_weight_ns = 0 (a B/W split is unknown);
// - output_bytes = activation_size (a list "[a; b; c]" is summed, as PipeDream's reader does);
//   stash_bytes = output_bytes; parameter_bytes = parameter_size; optimizer_bytes = 0 (the
//   planner derives optimizer state from the optimizer it plans for);
// - a source whose description starts with "Input" is marked is_data_loading (its forward time
//   is data loading, not compute). Other sources (GNMT's `hidden`) are ordinary layers;
// - layers are put in a topological order: Kahn's algorithm, ties by the node's line order;
// - micro_batch: the numbers hold for the whole profiled mini-batch. It is inferred from the
//   single `Input` source's activation as activation / (4 * 3 * S * S) for the first image side
//   S in {224, 299, 331} that divides exactly; otherwise (GNMT, test graphs) it is 1.
//
// Errors: InputError "<file>:<line>: <what was expected>" for a missing field, a bad number, an
// edge to an unknown node, a duplicate node or edge, a cycle; "<file>: ..." for an empty file.
// Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/profile.h"

namespace pw::models {

struct PipeDreamGraph {
  Profile profile;
  std::vector<int> stage_id;   // per profile layer (same order); -1 when the line has none
  std::vector<int> line;       // per profile layer: 1-based line of its node in the file
  bool has_stage_ids = false;  // true when at least one node line carries stage_id
};

// Parses graph text; `file` names the source in messages and gives the model name.
PipeDreamGraph parse_pipedream_graph(std::string_view text, const std::string& file);
PipeDreamGraph read_pipedream_graph(const std::string& file);
Profile import_pipedream_graph(const std::string& file);

// The one reader of a profile file, for every command that takes --profile: a pipewright.profile/1
// JSON document (its text starts with "{"), else a PipeDream graph.txt (imported as above).
// Errors as load_profile_file / import_pipedream_graph.
Profile load_any_profile_file(const std::string& file);

// The mini-batch a PipeDream profile was measured at, inferred as described above; 0 when it
// cannot be inferred (GNMT, test graphs) or would exceed limits::kMicroBatchSize
// (import_pipedream_graph then sets micro_batch = 1).
int64_t infer_pipedream_batch(const Profile& p);

// "12.345" (ms, at most 6 decimals, no sign or exponent) -> 12345000 ns; throws InputError
// "<where>: expected ..." otherwise, and past limits::kDurationNs (1e9 ms).
int64_t parse_ms_to_ns(std::string_view s, const std::string& where);
// "1234.000", "1234.0", "1234" -> 1234 bytes (a fractional part must be zero; at most
// limits::kBytes).
int64_t parse_bytes(std::string_view s, const std::string& where);

}  // namespace pw::models
