// run_setup: what run_pipeline (threads) and run_pipeline_ranks (MPI ranks) build alike from a
// model, a plan and the run options — the schedule, the data slicer, the network and the
// LayerStageCompute — so both drive the same numbers.
//
// BatchSlicer draws one mini-batch per iteration from a (sequential) DataSource through a
// DataLoader (exec/data/loader.h: `prefetch` mini-batches prepared ahead on a producer thread;
// 0 draws on the caller) and hands out row slices of it; thread-safe. Every rank of an MPI run
// draws the same mini-batches (same source, same seed), so a rank's slice equals the threaded
// run's. A worker may draw the next iteration's mini-batch itself (draw_ahead, with prefetch 0:
// run_pipeline when the workers own every core) while other workers slice the current one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "exec/data/data.h"
#include "exec/data/loader.h"
#include "exec/layers/network.h"
#include "exec/runtime/run_compute.h"
#include "exec/runtime/run_pipeline.h"
#include "planner/schedule.h"

namespace pw::exec {

class BatchSlicer {
 public:
  BatchSlicer(std::unique_ptr<DataSource> src, int64_t batch, int prefetch)
      : loader_(std::move(src), batch, prefetch), start_(loader_.state()) {}
  // Draws the mini-batches up to iteration `it` (the driver calls this before timing it): they
  // are handed out.
  void prepare(int it);
  void fill(int it, int64_t first, int64_t count, Tensor* data, Tensor* targets);
  // Draws the mini-batches up to iteration `it` without handing them out (a worker drawing the
  // next iteration's during this one). Not counted in wait_ns: no one waited for it.
  void draw_ahead(int it);
  // The source's position after the mini-batches handed out so far (not those prepared or
  // drawn ahead), so a checkpoint at a step boundary resumes exactly.
  DataState state();
  // Repositions the source; iterations count from 0 again (nothing drawn is kept).
  void restore(const DataState& s);
  std::string describe() const { return loader_.describe(); }
  // Time spent waiting for mini-batches since construction (DataLoader::wait_ns, less draw_ahead's).
  int64_t wait_ns();
  // DataLoader::bind_producer.
  void bind_loader(std::function<void()> bind) { loader_.bind_producer(std::move(bind)); }

 private:
  // Draws up to `it` in order. Holds draw_mu_ while the source draws and mu_ only to file the
  // batch, so slicing a batch already drawn never waits for a draw in progress.
  void draw(int it);
  // draw, with draw_mu_ held by the caller. First frees the batches before handed_ - 1 (no one
  // slices them any more) on the drawing thread: tensors reuse buffers the allocating thread
  // freed (exec/tensor.h), so a worker that draws and a driver that frees left the worker's
  // every draw on fresh pages (9.3 ms against 2.9 ms for the mlp 8x1024's mini-batch).
  void draw_locked(int it);
  void hand_out(int it);  // under mu_: `it` is handed out
  std::mutex draw_mu_;    // the loader (not thread-safe) and the drawing order; taken before mu_
  std::mutex mu_;         // next_, cache_, after_, handed_
  DataLoader loader_;
  DataState start_;  // the position before iteration 0
  int next_ = 0;     // the first iteration not drawn yet
  int handed_ = -1;  // the last iteration handed out
  std::map<int, Batch> cache_;
  std::map<int, DataState> after_;  // the position after each drawn iteration's mini-batch
  int64_t ahead_ns_ = 0;            // draw_ahead's share of the loader's wait_ns
};

struct RunSetup {
  planner::Schedule schedule;
  int devices = 0;  // schedule.num_devices (replicas included)
  std::shared_ptr<BatchSlicer> slicer;
  // The worker that draws the next iteration's mini-batch at the start of each iteration
  // (BatchSlicer::draw_ahead; the slicer then has no producer thread), or -1: the slicer's
  // loader draws `prefetch` ahead on its own thread.
  int draw_device = -1;
  // Per device (exec/runtime/device_lanes.h); empty: the host. An MPI rank's (rank_lanes): its
  // own device on its GPU, the others the host.
  std::vector<Device> lanes;
  std::unique_ptr<Network> net;                // declared before compute: outlives it
  std::unique_ptr<LayerStageCompute> compute;  // replica 0 (the only one when unreplicated)
  // Threaded runs of replicated plans (add_replica_computes): replica i >= 1 of every stage
  // with more than i replicas runs on replica_computes[i - 1], its own Network and weights
  // (on GPUs: stage s's layers on the lane of stage s's replica i, layer_devices).
  std::vector<std::unique_ptr<Network>> replica_nets;
  std::vector<std::unique_ptr<LayerStageCompute>> replica_computes;
};

// An MPI rank's share of a run: the pipeline device it drives (its rank) and its GPU
// (device_lanes.h: rank_gpu; the host for a run on the host). rank < 0: a threaded run (every
// device in this process). A rank holds the weights of its own stages only (Network's `held`).
struct RankDevice {
  int rank = -1;
  Device gpu = Device::cpu();
};

// Checks (check_plan_for_model, steps) and builds; throws InputError. `worker_draws` (optional,
// consulted when options.prefetch > 0): given the run's schedule, the device whose worker draws
// the mini-batches (RunSetup::draw_device), or -1 for the background loader.
// With options.device a GPU: threaded runs put every device (replicas included) on a lane of
// its own (pipeline_lanes); an MPI rank (`rank`) puts the stages its device runs (as replica
// replica_index(rank)) on rank.gpu and every other stage on the host.
RunSetup make_run_setup(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options,
                        const std::function<int(const planner::Schedule&)>& worker_draws = {},
                        const RankDevice& rank = {});
// Adds the computes of replicas 1.. (one per replica index up to the largest replica count),
// each on a Network built with the run's seed (so initial weights equal replica 0's).
void add_replica_computes(RunSetup& setup, const models::Model& model, const planner::Plan& plan,
                          const PipelineRunOptions& options);
// Replica index of `device` within its stage (0 for unreplicated schedules).
int replica_index(const planner::Schedule& schedule, int device);
// Per device, the compute it drives (requires add_replica_computes for replicated plans).
std::vector<StageCompute*> device_computes(const RunSetup& setup);
// Mean loss of iteration `it` over the mini-batch, summed over the loss stage's replicas.
double run_loss(const RunSetup& setup, int it);

// Copies of every stage's weights and optimizer state (LayerStageCompute::checkpoint_state).
std::vector<NamedTensors> copy_stage_states(LayerStageCompute& compute);

int64_t median_ns(std::vector<int64_t> v);

// Whether a run with a checkpoint directory writes a checkpoint after `done` of `total` steps
// (warm-up counted): at the last step, when the run stops there, and every checkpoint_every
// steps. False without a checkpoint directory.
bool checkpoint_due(const PipelineRunOptions& options, int done, int total, bool stop);

// The end-to-end figures of PipelineRunResult (run_pipeline.h): the driver calls step_begins
// before fetching a step's mini-batch and step_ends after the step's last work; steps below
// `first_timed` (warm-up) are not counted. paused(ns): the driver spent `ns` between two steps
// on work that is not the run's (PipelineRunOptions::between_steps); it is left out of wall_s
// when timed steps lie on both sides of it. Single-threaded (the driver's).
class EndToEndClock {
 public:
  EndToEndClock(BatchSlicer& slicer, int first_timed) : slicer_(slicer), first_timed_(first_timed) {}
  void step_begins(int step);
  void step_ends(int step);
  void paused(int64_t ns);
  // Sets r.wall_s, end_to_end_samples_per_s, data_wait_s and data_bound.
  void fill(PipelineRunResult& r, int64_t batch) const;

 private:
  BatchSlicer& slicer_;
  int first_timed_;
  int steps_ = 0;
  bool begun_ = false;
  std::chrono::steady_clock::time_point t0_, t1_;
  int64_t wait0_ = 0, wait1_ = 0;
  int64_t pending_pause_ns_ = 0, paused_ns_ = 0;  // since the last timed step; between timed steps
};

}  // namespace pw::exec
