// run_compare: the prediction a measured run is set beside. Measures a profile of the model on
// this machine (exec/profiler.h) and the optimizer step per worker, simulates the same plan
// with them (sim/), and returns the predicted iteration time and per-worker peak memory.
// Used by `pipewright run --compare` and by the main job (`pipewright demo`).
//
// Memory is compared like for like: the runtime measures (exec/run_compute.h memory_bytes,
// sampled between ops) the tensors a worker holds — parameters, gradients, optimizer state,
// stashed micro-batches — and never an op's transient working set. So peak_memory_bytes is
// the simulated peak of exactly those (the plan simulated with working_bytes = 0); the
// transient the simulator and planner add on top while an op runs (the profile's
// workspace_bytes, largest over a worker's stages) is reported apart in working_bytes, and
// report (the full simulation) includes it. Split schedules (zb-h1) also hold, from a B to
// its W, what B keeps for W (the profile's weight_pending_bytes): the simulation and the
// planner both count it.
//
// On a GPU (PredictionMeasurement's `device`: `run --compare --device cuda`) the profile is
// measured on that GPU, one copy, in context, with CUDA events around each op (exec/profile/
// in_context.h) at the plan's micro-batch size, after the same untimed warm-up passes (the
// first calls build cuBLASLt plans and grow the caching allocator), medians; the optimizer
// step per worker is timed on the GPU as the run steps (measure_step_ns); hand-offs are priced as on the host
// (measure_handoff_ns: the run's workers hand off on host threads; a peer copy between GPUs is not priced beyond that).
// Prediction::gpu then holds what the comparison adds on GPUs (device_compare.h). Several GPUs:
// the profile of the first is used for all of them.
//
// Not thread-safe with a pipeline run in flight (it measures on the calling thread and sets
// the OpenMP thread count).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/optimizer.h"
#include "exec/profile/co_run.h"
#include "exec/profile/profiler.h"
#include "exec/runtime/device_compare.h"
#include "models/layer_graph.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "sim/engine.h"
#include "sim/report.h"

namespace pw::exec {

struct Prediction {
  models::Profile profile;  // measured here, at the plan's micro-batch size
  sim::StageCosts costs;    // the stage costs simulated (step_ns measured per worker)
  sim::Report report;       // simulation of the plan with that profile
  sim::Trace trace;         // that simulation's timeline (one iteration)
  double iteration_ms = 0;
  int64_t handoff_ns = 0;                  // per transfer between workers (exec/profile/handoff.h)
  std::vector<int64_t> peak_memory_bytes;  // per worker (device): held tensors, no workspace
  std::vector<int64_t> working_bytes;      // per worker: largest transient of an op (not in the above)
  std::optional<GpuComparison> gpu;        // on GPUs only (measured_peak_bytes left to the caller)
};

// Median wall time (ns) of each worker's optimizer steps on `device` as LayerStageCompute runs
// them (per stage: the finite check of the gradients, the update, the finite check of the
// weights, the zeroing), after warm-up steps (the first ones grow the allocator and, on a GPU,
// build the kernels' launch tables). One entry per worker of the plan; 0 for a worker without
// parameters.
std::vector<int64_t> measure_step_ns(const models::Model& model, const planner::Plan& plan,
                                     const OptimizerOptions& optimizer, Device device);

// Median time (ns) the model's data source takes to draw one mini-batch of `rows` rows (the
// background loader's work per iteration; exec/data/loader.h), on the calling thread.
int64_t measure_draw_ns(const models::Model& model, const std::string& data_file, uint64_t seed, int64_t rows);

// The prediction's profile spans at least this much of timed passes per copy (at most
// kProfileMaxPasses passes; prediction_round_passes).
inline constexpr int64_t kProfileSpanNs = 500'000'000;
inline constexpr int kProfileMaxPasses = 300;
// One in-context pass of the whole model by the profile's base times: F, B, W and step summed.
int64_t in_context_pass_ns(const models::Profile& profile);

// Prices each stage's ops (and each device's step) from the profile of the co-run copy that ran
// on that device's cores (measure_profile's per_copy: copy d on worker d's cores), in place of
// the copies' pooled medians. Unchanged (returns false) when there is one device, the copies do
// not match the devices one to one, or stages are replicated.
bool price_on_own_cores(sim::StageCosts& costs, const planner::Plan& plan, const planner::Schedule& sched,
                        const std::vector<models::Profile>& per_copy);

// Sets `mo` (in-context, co-run, one copy per pipeline device) so that copy d computes what the
// plan's worker d computes: the layers of its stages (copy_layers), micro-batch after
// micro-batch in its schedule's order (copy_order: each F, B, W or BW op of the device over its
// stage's layers), with per-layer trimmed means (trimmed_mean) scaled so that each op is
// priced by the trimmed mean of its totals (exec/profile/op_totals.h), and returns
// true. A whole-model pass priced a 1F1B stage's backward 8-12% high against the same ops in
// gpipe order, and a sum of per-layer medians fell 5-10% short of the ops those layers make up
// (bench/RESULTS.md). Leaves whole-model passes and medians (returns false) for one
// device, replicated stages and asynchronous schedules.
bool worker_passes(const planner::Plan& plan, MeasureOptions& mo);

// `threads`: OpenMP threads to measure with (the worker's core count in the run). The profile
// is measured in context and co-run (exec/profiler.h): one copy per worker of the plan, each on
// `threads` threads, computing what that worker computes (worker_passes), in kInContextRounds rounds
// (prediction_round_passes); each worker's ops are priced from the copy on its cores
// (price_on_own_cores); on a GPU (`device` cuda, the run's workers split over `gpus` GPUs from
// its index on) as the header says instead. `draw_ns` (> 0 when the run draws its data in the background): charged
// as StageCosts::data_ns to the worker that draws, at the start of each iteration
// (loader_device, exec/runtime/run_pipeline.h; none when the loader has cores of its own).
//
// The rounds are the caller's to place: round() measures one now. `run --compare` and `demo`
// run theirs between the run's steps (is_compare_round_step, PipelineRunOptions::between_steps)
// and the last after the run, so that the profile samples the same minutes as the timed steps:
// this VM runs the same code in states about 25% apart that last seconds to minutes, and a
// profile measured after the run caught another state than the run at 1-2 points of every
// grid (up to +34%; bench/RESULTS.md). predict() measures the rounds still missing,
// then the hand-off and, for old-style profiles, the optimizer step, and simulates.
// Not thread-safe; the calling thread's OpenMP thread count is used for the bytes pass.
class PredictionMeasurement {
 public:
  PredictionMeasurement(const models::Model& model, const planner::Plan& plan, int threads,
                        const OptimizerOptions& optimizer, int64_t draw_ns = 0, Device device = Device::cpu(),
                        int gpus = 1);
  ~PredictionMeasurement();
  PredictionMeasurement(const PredictionMeasurement&) = delete;
  PredictionMeasurement& operator=(const PredictionMeasurement&) = delete;

  // One round of the profile now (nothing once kInContextRounds are done): on `workers` (a
  // run's own worker threads, PipelineRunOptions::between_steps) when given, else on threads
  // of its own. On a GPU `workers` is not used (the round runs on the calling thread).
  void round(const CopyThreads* workers = nullptr);
  int rounds_done() const;
  int timed_passes() const;  // per copy, over the rounds so far
  int64_t pass_ns() const;   // one pass by the first round's medians (0 before it)
  Prediction predict();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Timed passes per copy of the prediction's round `rounds_done` (0-based): the first
// ceil(kInContextTimedPasses / kInContextRounds); later ones, by `pass_ns` (one pass by the first
// round's medians, in_context_pass_ns), enough that all rounds together span kProfileSpanNs
// (at most kProfileMaxPasses passes, at least kInContextTimedPasses). Pure.
// PredictionMeasurement::round tops the first round up to the later rounds' count
// (ProfileInRounds::top_up) once its passes have given pass_ns.
int prediction_round_passes(int rounds_done, int64_t pass_ns);

// Whether a round of the prediction runs after `done` steps (warm-up included) of a run of
// `warmup_steps` + `steps`: before the last warm-up step (before the first timed step when
// there are fewer than 2), and halfway through the timed steps when there are at least 4 (the
// third runs after the run). The step after a round runs on caches the profile's copies left:
// the default gpt's took 5-7% (up to 35%) longer than its neighbours, so the first round's is a
// warm-up step, and a run's median has at most one such step among 4 or more. Pure.
bool is_compare_round_step(int done, int warmup_steps, int steps);

// The PipelineRunOptions::between_steps of `run --compare` and `demo` for a run of
// `warmup_steps` + `steps`: after each step is_compare_round_step names, one round of
// `measurement()` (the caller may make it on first use) on the run's own worker threads.
std::function<void(int, const CopyThreads&)> compare_rounds_between_steps(
    int warmup_steps, int steps, std::function<PredictionMeasurement&()> measurement);

// All rounds at once, now: PredictionMeasurement(...).predict().
Prediction predict_from_measurement(const models::Model& model, const planner::Plan& plan, int threads,
                                    const OptimizerOptions& optimizer, int64_t draw_ns = 0);

// The host memory the measurement of a prediction on the host is expected to need, all its
// co-run copies together: the profiler's own estimate (exec/profile/measure_memory.h:
// in_context_copy_bytes, the copies and their op orders as the measurement will run them) over
// the model's analytic profile at the plan's micro-batch size; 0 when the model has a layer the
// cost model cannot price. What `run --compare` checks before the run, so that a measurement
// that cannot fit is refused before the run's work, not after it.
int64_t prediction_measurement_bytes(const models::Model& model, const planner::Plan& plan, int threads,
                                     const OptimizerOptions& optimizer);

// `run --run-trace F`: the measured trace with what `simulate --replay` needs (sim/run_trace.h:
// schedule, stages, micro-batches, the warm-up iterations to skip, and the predicted costs when
// `prediction` is given). Keeps the last `keep_iterations` (>= 1) iterations' ops in full and a
// summary of every iteration (`run --trace-keep K`; INT_MAX for --trace-all). Written atomically.
void write_run_trace(const std::string& file, const planner::Plan& plan, const sim::Trace& measured,
                     int warmup_iterations, const Prediction* prediction, int keep_iterations);

// `run --compare --svg F`: the predicted iteration and the last measured one, side by side
// (sim/compare_svg.h). Written atomically.
void write_compare_svg(const std::string& file, const planner::Plan& plan, const Prediction& prediction,
                       const sim::Trace& measured, int warmup_iterations, const std::string& model_name);

}  // namespace pw::exec
