// run_memory: the memory a pipeline run is predicted to hold at its peak, before anything is
// allocated; what `run` checks against the host's bound or each card's memory.
//
// The prediction is the simulator's (sim/engine.h "Memory per device") over the model's analytic
// profile at the plan's micro-batch size (models/cost.h: the memory figures of models::layer_cost,
// which train's check and its predicted_peak_memory_bytes use too): per worker, its stages'
// weights, gradients and optimizer state, the stashed activations of the micro-batches it holds
// in flight (so a 1f1b plan needs less than a gpipe plan of the same stages), stashed weight
// versions (pipedream-async, 2bw) and the workspace of the op running. One simulated iteration
// (two for asynchronous schedules, whose steady state starts in the second); times come from the
// analytic profile and decide no more than the interleaving of workers that share memory.
//
// Where the workers' memory is: one place per card of `lanes` (as device_lanes.h lays them out;
// the largest sum over the card's workers of their live bytes at one instant of the trace,
// device_compare.h: card_peak_bytes), or the host for all of them when `lanes` is empty.
// Not counted: the runtime's own buffers (hand-off queues, the data loader's prefetch), a CUDA
// context. Pure (nothing is allocated on a device).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "exec/optimizer.h"
#include "exec/tensor.h"
#include "models/layer_graph.h"
#include "planner/plan.h"
#include "planner/schedule.h"

namespace pw::exec {

struct MemoryNeed {
  Device where;              // the host, or a GPU (stream slot 0)
  std::vector<int> workers;  // the pipeline devices (workers) whose memory is there
  int64_t bytes = 0;         // predicted peak
};

// The needs of a run of `plan` on `model` with `optimizer`, scheduled by `schedule` (an imported
// schedule; null: the plan's own, sim::schedule_for_plan). `lanes`: one per worker (all on CUDA
// devices), or empty for the host. std::nullopt when a layer has no analytic cost (an imported
// opaque layer): nothing can be predicted.
std::optional<std::vector<MemoryNeed>> predicted_run_memory(const models::Model& model, const planner::Plan& plan,
                                                            const OptimizerOptions& optimizer,
                                                            const planner::Schedule* schedule,
                                                            const std::vector<Device>& lanes);

// An MPI job's needs as seen from rank `rank`'s process (each rank holds its own stages only,
// run_setup.h), wherever the stages run (the host, or the rank's GPU): own_bytes, its worker's
// peak alone; all_bytes, the peak of all workers together (every rank on one host);
// rank0_checkpoint_bytes, the host memory rank 0 adds while it writes or resumes a checkpoint:
// the largest state (weights and optimizer state) of a stage it does not run, received into
// tensors of its own to be written, or read into them to be sent (rank_checkpoint.h).
// std::nullopt as predicted_run_memory.
struct RankNeed {
  int64_t own_bytes = 0;
  int64_t all_bytes = 0;
  int64_t rank0_checkpoint_bytes = 0;
};
std::optional<RankNeed> predicted_rank_memory(const models::Model& model, const planner::Plan& plan,
                                              const OptimizerOptions& optimizer, const planner::Schedule* schedule,
                                              int rank);

}  // namespace pw::exec
