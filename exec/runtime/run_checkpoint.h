// The checkpoints of `pipewright run` (exec/runtime/checkpoint.h's format), shared by the
// threaded run (run_pipeline.h) and the MPI ranks (run_ranks.h), so that both write the same
// directory for the same plan and options: the identity is the same (a checkpoint of an MPI job
// resumes on threads and the other way round, with equal results up to the thread count per
// worker), and so are the run forms that cannot checkpoint yet.
#pragma once

#include <string>

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
// checkpoints it cannot write: replicated stages, vertical sync, 2bw, a tied table split
// across stages; a negative --checkpoint-every or one without --checkpoint.
void check_run_checkpointing(const RunSetup& setup, const planner::Plan& plan, const PipelineRunOptions& options);

}  // namespace pw::exec
