// run_setup: what run_pipeline (threads) and run_pipeline_ranks (MPI ranks) build alike from a
// model, a plan and the run options — the schedule, the data slicer, the network and the
// LayerStageCompute — so both drive the same numbers.
//
// BatchSlicer draws one mini-batch per iteration from a (sequential) DataSource and hands out
// row slices of it; thread-safe. Every rank of an MPI run draws the same mini-batches (same
// source, same seed), so a rank's slice equals the threaded run's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "exec/data.h"
#include "exec/network.h"
#include "exec/runtime/run_compute.h"
#include "exec/runtime/run_pipeline.h"
#include "planner/schedule.h"

namespace pw::exec {

class BatchSlicer {
 public:
  BatchSlicer(std::unique_ptr<DataSource> src, int64_t batch) : src_(std::move(src)), batch_(batch) {}
  // Draws the mini-batches up to iteration `it` (the driver calls this before timing it).
  void prepare(int it);
  void fill(int it, int64_t first, int64_t count, Tensor* data, Tensor* targets);
  // The source's position after the mini-batches drawn so far.
  DataState state();
  void restore(const DataState& s);
  std::string describe() const { return src_->describe(); }

 private:
  void draw(int it);
  std::mutex mu_;
  std::unique_ptr<DataSource> src_;
  int64_t batch_;
  int next_ = 0;
  std::map<int, Batch> cache_;
};

struct RunSetup {
  planner::Schedule schedule;
  int devices = 0;
  std::shared_ptr<BatchSlicer> slicer;
  std::unique_ptr<Network> net;                  // declared before compute: outlives it
  std::unique_ptr<LayerStageCompute> compute;
};

// Checks (check_plan_for_model, steps) and builds; throws InputError.
RunSetup make_run_setup(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options);

// Copies of every stage's weights and optimizer state (LayerStageCompute::checkpoint_state).
std::vector<NamedTensors> copy_stage_states(LayerStageCompute& compute);

int64_t median_ns(std::vector<int64_t> v);

}  // namespace pw::exec
