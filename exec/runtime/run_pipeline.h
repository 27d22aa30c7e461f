// run_pipeline: trains a model as a pipeline described by a Plan — the driver behind
// `pipewright run` and the runtime benchmark.
//
// Checks (InputError, one line each): the plan's stages must cover the model's layers
// contiguously and in order (and name them, when layer_names are given), there must be no
// more stages than layers, the batch must be micro_batch_size x num_micro_batches, and the
// schedule must allow the plan's micro-batch count (planner::make_schedule's rules, e.g.
// interleaved needs a multiple of the devices).
//
// Replicated stages (a stage with several devices, PipeDream's hybrid plans): schedules gpipe,
// 1f1b or pipedream-async with chunks = 1 (planner::make_replicated_schedule, an all-reduce for
// every replicated stage; pipedream-async needs num_micro_batches a multiple of every replica
// count). Devices are numbered as that schedule numbers them (stage by stage, replica 0
// first), one worker (thread, or MPI rank) each; every replica has its own copy of the model
// (same seed: identical initial weights), weights, gradients and optimizer state. Synchronous:
// the replicas' gradients are summed at the flush, so training equals the unreplicated plan up
// to float reordering. pipedream-async: after each backward the replicas average their
// gradients (round k = the k-th backward of each replica) and apply the same update, so a plan
// whose stages all have r replicas trains as the unreplicated plan with r-times larger
// micro-batches. Checkpoints save replica 0's state (the others' is bit-identical to it) and a
// resume loads it into every replica. On GPUs every replica is a worker with its own lane and
// the all-reduce is staged through the host (replica_allreduce.h). Not supported with
// replicated stages (InputError): 2bw, interleaved, zb, vertical sync, tied embeddings split
// across stages.
//
// Data: exec/data/data.h's source for the model (text for gpt, synthetic otherwise); each
// iteration takes one mini-batch (before the iteration's timing starts: data loading is not
// part of iteration_ns), sliced into micro-batches. With prefetch > 0 drawing overlaps the
// pipeline: on cores no worker uses, `prefetch` ahead on a producer thread
// (exec/data/loader.h); when the workers own every core, synchronous schedules have the worker
// loader_device names draw the next iteration's mini-batch as each iteration starts (inside
// iteration_ns, in that worker's fill bubble, as the prediction charges it), asynchronous ones
// keep the producer thread pinned to that worker's cores. The result's end-to-end figures
// (wall_s, end_to_end_samples_per_s) include whatever it does not hide. Synchronous schedules step once
// per iteration; pipedream-async after every micro-batch (weight stashing); 2bw once per
// mini-batch on double-buffered weights, one step delayed (exec/runtime/run_compute.h).
//
// Checkpoints (exec/checkpoint.h): steps are counted over the whole run, warm-up included
// (warmup_steps + steps in all). With checkpoint_dir, every stage's weights and optimizer
// state, the step and the data loader's position are saved every checkpoint_every steps,
// after the last step and on a stop; resume_dir continues from such a checkpoint so that the
// remaining losses and the final weights are bitwise identical to an uninterrupted run (same
// thread count per worker). stop_requested is polled between iterations: every worker stops at
// the same step boundary. Numerical faults: NumericalFault (exec/numerics.h) with the run's
// step; no checkpoint is written for the faulty step.
// Vertical sync keeps weight versions across steps that checkpoints do not hold: combining it
// with checkpoint_dir or resume_dir is an InputError.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "exec/data/loader.h"
#include "exec/machine/pinning.h"
#include "exec/optimizer.h"
#include "exec/profile/co_run.h"
#include "exec/runtime/pipeline_runtime.h"
#include "models/layer_graph.h"
#include "planner/plan.h"
#include "sim/trace.h"

namespace pw::exec {

struct PipelineRunOptions {
  int steps = 10;
  // Extra training steps run before the `steps` measured ones: they train (the weights move on)
  // but are not in losses, iteration_ns or the statistics. The first steps of a run are slower
  // (measured: 5-8 steps at up to 2x on the CI machine) while the machine warms up.
  int warmup_steps = 0;
  std::string data_file;            // "" = default data for the model
  int prefetch = kDefaultPrefetch;  // mini-batches drawn ahead in the background (>= 0; 0: none)
  uint64_t seed = 1;
  OptimizerOptions optimizer;  // default: SGD lr 0.01 momentum 0.9
  bool vertical_sync = false;  // asynchronous schedules only
  int threads_per_worker = 0;  // 0 = the worker's cores
  std::chrono::milliseconds timeout{0};
  std::string checkpoint_dir;            // "" = no checkpoints
  int checkpoint_every = 0;              // steps between checkpoints; 0 = at the end and on a stop
  std::string resume_dir;                // "" = start fresh
  std::function<bool()> stop_requested;  // may be empty; polled after every step
  // MPI runs (run_pipeline_ranks), both may be empty: the signal number behind this rank's stop
  // request (0: none; the ranks agree on the largest, so every rank reports the same one), and
  // whether the launcher sent it (mpirun tearing the job down: exec/runtime/run_ranks.h).
  std::function<int()> stop_signal;
  std::function<bool()> stop_from_launcher;
  // MPI runs: how long a rank waits for the others within a step (and in each collective)
  // before naming the ranks that stopped responding; 0 = derived from the measured steps
  // (run_ranks.h: max(10 s, 20 x the median step so far); 5 minutes before the first step).
  std::chrono::milliseconds step_deadline{0};
  // MPI runs, tests only (PW_TEST_PAUSE_AT_STEP, exec/runtime/fault_injection.h): after the ops
  // of step `pause_at_step` (1-based, warm-up included) every rank waits for a stop request.
  int pause_at_step = 0;
  // MPI runs, tests only: rank 0 sleeps this long before it writes a checkpoint's first stage
  // (a slow disk), while the other ranks wait to send theirs.
  std::chrono::milliseconds test_checkpoint_write_delay{0};
  // May be empty; called once every check has passed and a checkpoint (if any) is loaded,
  // before the first iteration (e.g. to print a banner only for a run that starts).
  std::function<void()> on_start;
  // May be empty; threaded runs only (run_pipeline). Called on the driver thread after each
  // step that is not the last one run, with the steps done so far (warm-up included, counted
  // over the whole run as checkpoints count them), while every worker waits for the next
  // iteration: the cores are free, and `workers` runs work on the worker threads themselves
  // (PipelineRuntime::run_on_workers). Not in any step's iteration_ns nor in wall_s. `run
  // --compare` measures its profile here, in rounds between the steps (run_compare.h).
  std::function<void(int done, const CopyThreads& workers)> between_steps;
  // Keep a copy of every stage's final weights and optimizer state in the result (tests).
  bool keep_final_weights = false;
  // MPI runs only (run_pipeline_ranks), for the fault tests: "<rank>:<op>[:kill]" makes that
  // rank throw (or SIGKILL itself) when it starts that op, e.g. "1:B(1,3)" (exec/runtime/
  // fault_injection.h). The CLI reads it from the environment variable PW_TEST_INJECT_FAULT.
  std::string inject_fault;
  // An imported schedule (run --schedule-csv: planner/schedule_csv.h) run instead of the one
  // schedule_for_run derives from the plan's kind. It must be valid (validate_schedule) and
  // match the plan: the same virtual stages, micro-batches and devices, each stage on the
  // device the plan gives it (even_plan_for_schedule builds such a plan). Unreplicated only.
  std::optional<planner::Schedule> schedule;
  // Where the workers run (exec/runtime/device_lanes.h): the host, or CUDA: every worker
  // (every replica of a replicated stage included) on a stream slot of its own, the workers
  // split over `gpus` GPUs from device.index on. MPI ranks (run_ranks.h): each rank on one GPU
  // (gpus must be 1): device.index for every rank, or with device_by_local_rank (the flag said
  // `cuda` without an index) GPU local rank mod the host's GPUs (device_lanes.h: rank_gpu).
  // Checkpoints stage device tensors through the host (the files are those of a host run).
  Device device = Device::cpu();
  int gpus = 1;
  bool device_by_local_rank = false;
};

// Named tensors of one stage ("<layer>/<k>" weights, "opt/..." optimizer state).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct StepReport {
  int step = 0;  // 1-based
  int steps = 0;
  double loss = 0;
  int64_t iteration_ns = 0;
  double samples_per_s = 0;  // this step
};

struct PipelineRunResult {
  std::vector<double> losses;         // per step, mean over the mini-batch
  std::vector<int64_t> iteration_ns;  // per step, wall time
  double samples_per_s = 0;           // batch / median iteration time
  double median_iteration_ms = 0;
  // End to end, data included, over the timed steps this call ran (warm-up excluded): the wall
  // clock from the start of the first (before its mini-batch is fetched) to the end of the
  // last (checkpoints and progress callbacks included), samples over it, the time the driver
  // waited for mini-batches in it, and whether that wait makes data loading the bottleneck
  // (exec/data/loader.h: data_loading_bound). MPI runs: rank 0's clock and wait.
  double wall_s = 0;
  double end_to_end_samples_per_s = 0;
  double data_wait_s = 0;
  bool data_bound = false;
  std::vector<int64_t> peak_memory_bytes;      // per device: largest sampled memory_bytes
  std::vector<int64_t> peak_activation_bytes;  // per virtual stage (LayerStageCompute)
  std::vector<std::string> placement;          // per device, e.g. "core 0 (socket 0)"
  std::vector<std::string> lanes;              // per device on GPUs, e.g. "cuda:0/stream1"; empty on the host
  std::string warning;                         // oversubscription / pinning, "" if none
  int64_t transport_spin_ns = 0;               // a waiting worker's spin before it sleeps (RuntimeOptions::spin)
  sim::Trace trace;                            // measured, all steps
  int first_step = 0;                          // steps (warm-up included) done before: the resume point
  int iterations_run = 0;                      // iterations this call ran (warm-up included)
  bool stopped = false;                        // stop_requested() ended the run early
  int stop_signal = 0;                         // MPI runs: the agreed signal of the stop, 0 if none
  bool stopped_by_launcher = false;            // MPI runs: mpirun (or its orted) sent it
  int64_t checkpoint_step = -1;                // step of the last checkpoint written, -1 if none
  std::vector<NamedTensors> final_weights;     // per virtual stage, with keep_final_weights
                                               // (replica 0's weights of a replicated stage)
  // Threaded runs with keep_final_weights: [replica i - 1][stage] the weights of replica i >= 1
  // of each stage (empty for stages with at most i replicas).
  std::vector<std::vector<NamedTensors>> replica_final_weights;
};

// Throws InputError with a one-line reason when the plan does not fit the model (see above).
// With `schedule` (an imported one, PipelineRunOptions::schedule) the plan's stages and
// devices are checked against it instead of against the schedule of the plan's kind.
void check_plan_for_model(const planner::Plan& plan, const models::Model& model,
                          const planner::Schedule* schedule = nullptr);

// The plan as the runtime runs it: an asynchronous plan with replicated stages whose
// num_micro_batches is not a multiple of every replica count (the planner states the
// steady-state rate; the round-robin needs whole periods) runs iterations of the smallest
// multiple of num_micro_batches that is (batch scaled alike): run_pipeline and
// run_pipeline_ranks apply this first. Any other plan is returned unchanged.
planner::Plan plan_for_run(const planner::Plan& plan);

// The schedule the runtime runs for the plan (replicated stages: see above). Throws InputError.
planner::Schedule schedule_for_run(const planner::Plan& plan);
// options.schedule when set, else schedule_for_run(plan). An imported schedule must have been
// checked against the plan first (check_plan_for_model with it, as make_run_setup and
// run_pipeline_ranks do).
planner::Schedule schedule_for_run(const planner::Plan& plan, const PipelineRunOptions& options);

// An even split of the model's layers into stages * chunks virtual stages (equal layer
// counts, the first ones one larger), batch = micro_batch_size * num_micro_batches.
planner::Plan even_plan(const models::Model& model, int stages, int num_micro_batches, int64_t micro_batch_size,
                        planner::ScheduleKind kind, bool recompute, int chunks = 1);

// The plan an imported schedule runs with: the model's layers split evenly (as even_plan) into
// the schedule's virtual stages, stage s on schedule.stage_device[s], the schedule's kind,
// micro-batches and chunks (virtual stages / devices, which must divide). Throws InputError
// naming `where` (the CSV file) when the schedule is replicated, its stages do not divide
// among its devices, or the model has fewer layers than it has stages.
planner::Plan even_plan_for_schedule(const models::Model& model, const planner::Schedule& schedule,
                                     int64_t micro_batch_size, bool recompute, const std::string& where);

// Where the mini-batches are drawn: on cores no worker is placed on when the machine has some
// (returns -1: the background loader, DataLoader::bind_producer), else by (or, asynchronous
// schedules, beside) the worker of the last stage (replica 0), which idles while the pipeline
// fills; the draw of the next mini-batch starts with the iteration. `cores_used`: the cores the
// workers are placed on; `cores`: the machine's. The prediction charges the draw to that
// worker (sim::StageCosts::data_ns; exec/runtime/run_compare.h). Pure.
int loader_device(const planner::Schedule& schedule, int cores_used, int cores);
// The same for workers placed on `placement` (their cores' union is cores_used).
int loader_device(const planner::Schedule& schedule, const std::vector<CoreSet>& placement, int cores);

PipelineRunResult run_pipeline(const models::Model& model, const planner::Plan& plan, const PipelineRunOptions& options,
                               const std::function<void(const StepReport&)>& on_step = {});

}  // namespace pw::exec
