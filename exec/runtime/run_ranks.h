// run_pipeline_ranks: run_pipeline (exec/runtime/run_pipeline.h) for a job started by mpirun,
// one rank per pipeline device (a replicated stage has one rank per replica, numbered as
// schedule_for_run numbers the devices; the replicas' gradient all-reduce runs over the same
// MpiTransport, exec/runtime/replica_allreduce.h): this process builds the same model, data and compute as the
// threaded run and executes device world.rank()'s ops (RankRuntime over MpiTransport). With the
// same plan and options, losses and final weights equal the threaded run's.
//
// GPUs (options.device cuda[:N]): each rank runs its device's stages on stream slot 0 of one
// GPU (exec/runtime/device_lanes.h: rank_gpu, rank_lanes; several ranks may share a GPU), the
// stages it does not run stay on the host. Payloads crossing ranks are staged through the
// host: the sending rank's MpiTransport downloads them once the stream that made them is done,
// the receiving worker uploads them onto its lane (stage_worker.h); the replicas' ring
// all-reduce runs on host copies of the gradients (replica_allreduce.h). No NCCL and no
// CUDA-aware MPI. The kernels and their order are those of the threaded GPU run, so the losses
// are the same bits. Checkpoints stage the rank's stages through the host (HostStagedState):
// the same files as a host run. options.gpus must be 1 (InputError).
//
// Collective: every rank calls it with the same arguments.
// Input checks (InputError, as run_pipeline, plus: the rank count must equal the plan's
// devices; tied embeddings split across stages are not supported under MPI yet) are agreed on: if any rank's check
// fails, every rank throws RankInputError, which carries the lowest failed rank (so only that rank prints its message).
//
// Checkpoints: the format, identity and limits of the threaded run (run_checkpoint.h), so a
// checkpoint of either resumes on the other. At each checkpoint the ranks send their stages
// (weights, optimizer state, counters) to rank 0 one stage at a time, in messages of at most
// 1 GiB, and rank 0 writes each stage's file as it arrives (CheckpointWriter: temporaries
// renamed into place, the manifest last: one writer keeps the manifest the single commit
// point, and the directory is where rank 0 writes its other outputs); the others wait in a
// barrier until it is written. Each rank holds its own stages' weights only (run_setup.h), so
// rank 0's extra memory at a checkpoint is one other stage, and the checkpoint's size has no
// limit of MPI's (a gather of it all once failed past 2 GiB). --resume: rank 0 reads the
// manifest inside the input agreement, then every stage's file, and sends each stage to the
// ranks that run it (rank_checkpoint.h), inside a second agreement: only rank 0 touches the
// checkpoint directory, so it needs to exist on rank 0's host only, and a missing, mismatched or
// corrupt checkpoint is rank 0's one line and exit 2 on every rank. Resumed runs equal the
// uninterrupted run bitwise (losses and final weights) for the same plan and thread counts.
//
// Per iteration the ranks agree on the step (one allreduce): the iteration time is the
// largest rank's wall time, the loss comes from the rank(s) of the loss stage (each replica's
// share in its own slot, summed), and a stop request on any rank (options.stop_signal: the
// signal number; the largest wins, so every rank reports the same one; options.
// stop_from_launcher: mpirun's own SIGTERM, tools/mpi_stop.h) stops every rank at the same
// step, after that step's checkpoint (result: stop_signal, stopped_by_launcher).
//
// Step deadline: every wait of a step and every collective has options.step_deadline when it is
// given (`run --step-deadline`), else max(10 s, 20 x the median agreed step time so far, warm-up
// included), 5 minutes before the first step has been measured (options.timeout, when set and
// no step_deadline, replaces the derived value: tests). A wait past it does not fail the rank:
// each live rank sends the others a notice and collects theirs for max(1 s, deadline / 4) (at
// most 30 s); the ranks not heard from stopped responding (SIGSTOP, swapped out, hung in a
// system call). The lowest live rank prints "pipewright: rank K stopped responding: no answer
// within the step deadline (D s, --step-deadline); <where it waited>" and ends the job with
// MPI_Abort(1), which makes mpirun kill every rank, stopped ones included (SIGKILL ends a
// stopped process): every process is gone within about deadline + window + 2 s.
// on_start and on_step are called on rank 0 only. The result is complete on rank 0: trace of
// every rank (times from the shared, barrier-synchronised t0), peak memory per device,
// placement per device ("host: cores ..."), warnings, and with keep_final_weights every
// stage's weights (replica 0's of a replicated stage); other ranks get losses and iteration times only.
//
// A NaN or Inf (NumericalFault) on any rank ends every rank with RankNumericalFault
// (exec/runtime/rank_runtime.h) carrying the same text on every rank: "rank R, op OP: step N,
// stage S, layer ...", of the lowest rank that hit one (faults told within 0.5 s of each other
// count as simultaneous); the caller prints it once and exits 4 (`pipewright run`), and the
// ranks leave MPI normally (no MPI_Abort). Memory running out on a rank during the run (an
// allocation in an op, or while saving or gathering between steps) ends every rank the same way
// with RankOutOfMemory: "<what ran out> (at OP, iteration I)", the caller's one line and exit 3.
// Faults of both kinds in the same step: the lowest rank's, whatever its kind, on every rank.
// PW_ALLREDUCE=blocking (environment, for benchmarks; default overlapped) completes each
// replicated stage's all-reduce at its op instead of overlapping it (exec/runtime/stage_worker.h);
// PW_ALLREDUCE_BUCKET_BYTES=<bytes> sets the overlapped all-reduce's bucket size (default 4 MiB;
// 0: one bucket, started after the backward).
// Other failures during the run do not return: the failing rank prints "pipewright: rank R failed at
// OP (iteration I): what" on stderr, tells the other ranks, and after a grace period (for their
// lines) ends the job with MPI_Abort(1); a rank that learns of another's failure prints
// "pipewright: rank R stopping: <that line>" and aborts too. mpirun then ends every rank (also
// when a rank is killed outright), so every process exits non-zero.
#pragma once

#include <functional>
#include <stdexcept>

#include "exec/runtime/run_pipeline.h"
#include "exec/transport/mpi_world.h"

namespace pw::exec {

class RankInputError : public InputError {
 public:
  RankInputError(const std::string& what, int first_failed_rank, bool all_on_input = true)
      : InputError(what), first_failed_rank_(first_failed_rank), all_on_input_(all_on_input) {}
  int first_failed_rank() const { return first_failed_rank_; }
  // False when some rank's checks failed otherwise (out of memory, an internal error): that
  // rank rethrows its own failure and exits with its own code.
  bool all_on_input() const { return all_on_input_; }

 private:
  int first_failed_rank_;
  bool all_on_input_;
};

// Runs `checks` on every rank; if it throws InputError on any rank, every rank throws
// RankInputError (the failed ranks with their own message). Collective. A rank whose checks
// throw anything else takes part as failed (so no rank waits for it) and rethrows its own.
void agree_on_input(mpi::World& world, const std::function<void()>& checks);

PipelineRunResult run_pipeline_ranks(const models::Model& model, const planner::Plan& plan,
                                     const PipelineRunOptions& options, mpi::World& world,
                                     const std::function<void(const StepReport&)>& on_step = {});

}  // namespace pw::exec
