// Checkpoints of a training run (`pipewright train`, `pipewright run`): save and resume.
//
// A checkpoint is a directory:
//   manifest.json                 {"format": "pipewright.checkpoint/1", "step": n, "identity":
//                                  {...}, "data": {...}, "stages": [{"stage", "file", "bytes",
//                                  "fnv1a64"}, ...]}
//   stage-<s>.step-<n>.bin        one per stage: its weights and optimizer state
// `identity` is what must match for a resume: the model ({"name", "hash"}: FNV-1a 64 of the
// model's JSON description), the layout (command, stages with their layer ranges, schedule,
// micro-batching, batch) and the options that change the numbers (optimizer and its
// hyper-parameters, seed, data source). `data` is the data loader's position (RNG state as a
// hex string, batches drawn) and "fnv1a64", the FNV-1a 64 of that position, the step and the
// stage files' checksums (an edited position is refused on load); in-process all stages share
// one loader.
//
// Stage file (little-endian): magic "PWCKPT01", u32 stage, u32 tensor count, i64 step,
// i64 optimizer steps, i64 weight version; per tensor: u32 name length, name, u32 rank,
// i64 dims[rank], f32 values; then u64 FNV-1a 64 of every preceding byte.
//
// Crash safety: every file is written to a temporary in the directory, fsynced and renamed;
// the stage files first, the manifest last, then the directory is fsynced; only then are the
// previous step's stage files removed. A checkpoint is its manifest: a crash at any point
// leaves either the previous complete checkpoint or the new one, plus at most stray
// temporaries (named ".*.tmp*", removed by the next save and ignored by loads).
//
// Loading first checks that the file has exactly the size the receiving tensors imply (so a
// truncated or padded file is rejected before anything is read, and no allocation is sized
// from file contents), then the header, every tensor's name and shape, that every value is
// finite (a NaN or infinity, e.g. in an Adam moment, is refused even under a valid checksum),
// and the checksum.
// Errors are InputError, one line, naming the flag, the file and what differs; after a failed
// load the receiving tensors may hold part of the file (the caller abandons the run).
// Not thread-safe: call from the controlling thread at a step boundary.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/data/data.h"
#include "exec/layers/network.h"
#include "exec/tensor.h"
#include "models/json_util.h"
#include "models/layer_graph.h"

namespace pw::exec {

// The state of one stage: named tensors (weights first, then optimizer state; pointers are not
// owned, read on save and overwritten in place on load) and the counters that go with them.
struct StageState {
  std::vector<std::pair<std::string, Tensor*>> tensors;
  int64_t optimizer_steps = 0;
  int64_t weight_version = 0;
};

// Appends the parameters of layers [begin, end) of `net` to s.tensors, named "<layer>/<k>".
void add_layer_parameters(Network& net, int begin, int end, StageState& s);
// Appends named optimizer-state tensors (exec/optimizer.h's state_tensors()) as "opt/<name>".
void add_optimizer_state(std::vector<std::pair<std::string, Tensor*>> state, StageState& s);

struct CheckpointStageFile {
  int stage = 0;
  std::string file;  // name inside the checkpoint directory
  int64_t bytes = 0;
  std::string fnv1a64;  // 16 hex digits
};

struct CheckpointInfo {
  int64_t step = 0;  // optimizer steps (mini-batches) completed
  DataState data;
  Json identity;
  std::vector<CheckpointStageFile> stages;
};

// FNV-1a 64 of the model's JSON description, as 16 hex digits.
std::string model_hash(const models::Model& model);
// {"model": {"name", "hash"}, "layout": layout, "options": options}.
Json checkpoint_identity(const models::Model& model, Json layout, Json options);

// Writes the checkpoint of `step` into `dir` stage by stage, for a caller that has one stage at
// a time (an MPI rank 0 receiving the other ranks' stages: exec/runtime/run_ranks.cc). The
// constructor creates `dir` when missing and removes stray temporaries; add_stage writes the
// next stage's file (stages 0, 1, ... in order); commit writes the manifest, which makes the
// new checkpoint the directory's, then removes older stage files. Until commit the directory's
// checkpoint stays the previous one; a writer destroyed uncommitted leaves its stage files,
// which the next commit removes. Throws InputError naming `flag` and the directory or file on
// any I/O failure.
class CheckpointWriter {
 public:
  CheckpointWriter(std::string dir, int64_t step, std::string flag = "--checkpoint");
  void add_stage(const StageState& stage);
  void commit(const Json& identity, const DataState& data);

 private:
  std::string dir_, flag_;
  int64_t step_ = 0;
  Json files_ = Json::array();
  std::vector<std::string> stage_hashes_;
  bool committed_ = false;
};

// Writes the checkpoint of `step` into `dir` (created when missing) as described above, in one
// call (CheckpointWriter). Throws InputError naming `flag` and the directory or file on any I/O
// failure.
void save_checkpoint(const std::string& dir, const Json& identity, int64_t step, const DataState& data,
                     const std::vector<StageState>& stages, const std::string& flag = "--checkpoint");

// Reads dir/manifest.json and checks it against `identity` and the stage count: throws
// InputError("<flag> DIR: ...") naming the first difference ("the checkpoint's layout/stages
// is [[0,2],[2,5]], this run's is [[0,3],[3,5]]"), a missing or malformed manifest.
CheckpointInfo open_checkpoint(const std::string& dir, const Json& identity, int num_stages,
                               const std::string& flag = "--resume");

// Reads stage `stage`'s file of an opened checkpoint into `into` (same tensor names, order and
// shapes as saved). Throws InputError for a missing, truncated or corrupt file.
void load_stage(const std::string& dir, const CheckpointInfo& info, int stage, StageState& into,
                const std::string& flag = "--resume");

// Step of the complete checkpoint in `dir`, or -1 when there is none (no readable manifest).
int64_t checkpoint_step(const std::string& dir);

}  // namespace pw::exec
