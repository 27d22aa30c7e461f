// The checkpoints of `pipewright run` (exec/runtime/checkpoint.h's format), shared by the
// threaded run (run_pipeline.h) and the MPI ranks (run_ranks.h), so that both write the same
// directory for the same plan and options: the identity is the same (a checkpoint of an MPI job
// resumes on threads and the other way round, with equal results up to the thread count per
// worker), and so are the run forms that cannot checkpoint yet.
#pragma once

#include <string>
#include <vector>

#include "exec/runtime/run_pipeline.h"
#include "exec/runtime/run_setup.h"
#include "models/json_util.h"
#include "planner/plan.h"

namespace pw::exec {

// What must match for a resume: the model, the layout (stages, schedule, micro-batching, batch)
// and the options that change the numbers (optimizer, seed, data source).
Json run_checkpoint_identity(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options,
                             const BatchSlicer& slicer);

// Throws InputError naming --checkpoint / --resume (or --checkpoint-every) when the run asks for
// checkpoints it cannot write: vertical sync, 2bw, a tied table split across stages; a negative
// --checkpoint-every or one without --checkpoint. Replicated stages checkpoint replica 0's state
// (the all-reduce keeps every replica's weights and optimizer state bit-identical to it) and a
// resume loads it into every replica.
void check_run_checkpointing(const RunSetup& setup, const planner::Plan& plan, const PipelineRunOptions& options);

// A stage's checkpoint state whose tensors may live on a device (a pipeline on a GPU), seen
// through host copies: checkpoint files are written and read on the host, so a save downloads
// first and a load uploads after. Host tensors are used in place. The device tensors must
// outlive this object and not change between download() and the save.
class HostStagedState {
 public:
  explicit HostStagedState(StageState state);
  // The state with each device tensor replaced by its host copy (counters as given).
  StageState& host() { return host_; }
  void download();  // device tensors -> host copies (waits for their devices)
  void upload();    // host copies -> device tensors

 private:
  StageState device_;
  StageState host_;
  std::vector<Tensor> copies_;  // one per device tensor, in order
};

}  // namespace pw::exec
