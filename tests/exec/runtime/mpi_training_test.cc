// Acceptance: `mpirun -np N` (one rank per pipeline device) trains exactly as the threaded
// runtime on the same plan: losses and final weights (and optimizer state) equal within 1e-5
// relative. Rank 0 runs the threaded reference itself. Run with N = 2 and N = 4.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "exec/runtime/checkpoint.h"
#include "exec/runtime/run_ranks.h"
#include "models/zoo.h"
#include "planner/schedule_gen.h"
#include "tests/exec/mpi_test_world.h"
#include "tests/exec/runtime/same_training.h"

using namespace pw;
using namespace pw::exec;
using planner::ScheduleKind;
using pw::exec::testing::world;

namespace {

models::Model small_model(const std::string& family) { return testing::small_zoo_model(family, 4, 8); }

// 2 stages x 2 replicas: stage 0 on ranks 0, 1, stage 1 on ranks 2, 3; 4 micro-batches of 2.
planner::Plan two_by_two_replicas(const models::Model& model, ScheduleKind kind) {
  planner::Plan plan = even_plan(model, 2, /*micro-batches=*/4, /*size=*/2, kind, false);
  plan.stages[0].devices = {0, 1};
  plan.stages[1].devices = {2, 3};
  plan.num_devices_used = 4;
  return plan;
}

}  // namespace

TEST_CASE(
    "mpi runtime: one rank per device trains as the threaded runtime (gpipe, 1f1b, zb-h1, interleaved, mlp, gpt)") {
  const int D = world().size();
  const ScheduleKind kinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1,
                                ScheduleKind::interleaved_1f1b};
  for (const std::string family : {"mlp", "gpt"}) {
    const models::Model model = small_model(family);
    for (ScheduleKind kind : kinds) {
      CAPTURE(family);
      CAPTURE(planner::to_string(kind));
      CAPTURE(D);
      const int chunks = kind == ScheduleKind::interleaved_1f1b ? 2 : 1;
      REQUIRE(static_cast<int>(model.layers().size()) >= D * chunks);
      const planner::Plan plan = even_plan(model, D, /*micro-batches=*/4, /*size=*/2, kind, false, chunks);
      const PipelineRunOptions o = testing::compare_options();
      const PipelineRunResult mpi = run_pipeline_ranks(model, plan, o, world());
      REQUIRE(mpi.losses.size() == 3);
      for (double l : mpi.losses) CHECK(std::isfinite(l));
      if (world().rank() != 0) {
        CHECK(mpi.trace.events.empty());
        continue;
      }
      const PipelineRunResult ref = run_pipeline(model, plan, o);
      testing::check_same_training(mpi, ref);
      // Rank 0 holds every rank's events: each device ran its ops of every step, and received
      // transfers from other devices.
      std::set<int> devices, senders;
      int computed = 0;
      for (const auto& e : mpi.trace.events) {
        if (e.is_transfer) {
          senders.insert(e.device);
        } else {
          devices.insert(e.device);
          ++computed;
        }
      }
      const planner::Schedule sch = planner::make_schedule(kind, D, 4, chunks);
      CHECK(computed == 3 * static_cast<int>(sch.num_ops()));
      CHECK(static_cast<int>(devices.size()) == D);
      CHECK(static_cast<int>(senders.size()) == D);
      CHECK(mpi.peak_memory_bytes.size() == static_cast<size_t>(D));
      CHECK(mpi.placement.size() == static_cast<size_t>(D));
    }
  }
}

TEST_CASE("agree_on_input: a rank whose checks fail otherwise rethrows its own, the others are told, none waits") {
  // Once, a check that failed an internal check on one rank left the others waiting in the
  // agreement for its 10-minute deadline.
  // A hang here ends at the test's ctest timeout (120 s), long before that deadline.
  const int last = world().size() - 1;
  if (world().rank() == last) {
    CHECK_THROWS_WITH_AS(agree_on_input(world(), [] { throw std::logic_error("not an input error"); }),
                         "not an input error", std::logic_error);
  } else {
    try {
      agree_on_input(world(), [] {});
      CHECK(false);
    } catch (const RankInputError& e) {
      CHECK(e.first_failed_rank() == last);
      CHECK(std::string(e.what()) == "rank " + std::to_string(last) + " rejected the input");
    }
  }
}

TEST_CASE("mpi runtime: a rank count that does not match the plan is rejected on every rank") {
  const models::Model model = small_model("mlp");
  const int D = world().size();
  const planner::Plan plan = even_plan(model, D + 1, 2, 4, ScheduleKind::gpipe, false);
  PipelineRunOptions o;
  o.steps = 1;
  try {
    run_pipeline_ranks(model, plan, o, world());
    CHECK(false);
  } catch (const RankInputError& e) {
    CHECK(e.first_failed_rank() == 0);
    CHECK(std::string(e.what()) == "mpirun started " + std::to_string(D) + " ranks but the plan has " +
                                       std::to_string(D + 1) + " pipeline devices (one rank per device: mpirun -np " +
                                       std::to_string(D + 1) + ")");
  }
}

// Acceptance: with 4 ranks, a plan of 2 stages x 2 replicas (rank = device as the
// replicated schedule numbers them: stage 0 on ranks 0, 1, stage 1 on ranks 2, 3) trains as the
// threaded runtime on the same plan: the replicas' gradient all-reduce is the same code over the
// MPI transport. Skipped with other rank counts.
TEST_CASE(
    "mpi runtime: 2 stages x 2 replicas train as the threaded runtime (gpipe, 1f1b, pipedream-async, mlp and gpt)") {
  if (world().size() != 4) return;
  for (const std::string family : {"mlp", "gpt"}) {
    const models::Model model = small_model(family);
    for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::pipedream_async}) {
      CAPTURE(family);
      CAPTURE(planner::to_string(kind));
      const planner::Plan plan = two_by_two_replicas(model, kind);
      const PipelineRunOptions o = testing::compare_options();
      const PipelineRunResult mpi = run_pipeline_ranks(model, plan, o, world());
      REQUIRE(mpi.losses.size() == 3);
      if (world().rank() != 0) continue;
      const PipelineRunResult ref = run_pipeline(model, plan, o);
      testing::check_same_training(mpi, ref);
      int allreduces = 0;
      std::set<int> devices;
      for (const auto& e : mpi.trace.events)
        if (!e.is_transfer) {
          devices.insert(e.device);
          allreduces += e.kind == planner::OpKind::allreduce;
        }
      CHECK(static_cast<int>(devices.size()) == 4);
      CHECK(allreduces == 3 * (kind == ScheduleKind::pipedream_async ? 8 : 4));
    }
  }
}

// The replicas' ring all-reduce over MPI, overlapped (the default) or blocking (PW_ALLREDUCE,
// exec/runtime/run_ranks.h): the same ring on the same values in the same order, so losses and
// final weights are bit-identical. 4 ranks only (2 stages x 2 replicas).
TEST_CASE(
    "mpi runtime: 2 x 2 replicas, overlapped and blocking all-reduce train bit for bit alike (1f1b, "
    "pipedream-async)") {
  if (world().size() != 4) return;
  const models::Model model = small_model("mlp");
  for (ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::pipedream_async}) {
    CAPTURE(planner::to_string(kind));
    const planner::Plan plan = two_by_two_replicas(model, kind);
    const PipelineRunOptions o = testing::compare_options();
    const PipelineRunResult overlapped = run_pipeline_ranks(model, plan, o, world());
    ::setenv("PW_ALLREDUCE", "blocking", 1);
    const PipelineRunResult blocking = run_pipeline_ranks(model, plan, o, world());
    ::unsetenv("PW_ALLREDUCE");
    CHECK(overlapped.losses == blocking.losses);
    if (world().rank() != 0) continue;
    REQUIRE(overlapped.final_weights.size() == blocking.final_weights.size());
    for (size_t s = 0; s < overlapped.final_weights.size(); ++s) {
      REQUIRE(overlapped.final_weights[s].size() == blocking.final_weights[s].size());
      for (size_t k = 0; k < overlapped.final_weights[s].size(); ++k) {
        CAPTURE(overlapped.final_weights[s][k].first);
        const Tensor& a = overlapped.final_weights[s][k].second;
        const Tensor& b = blocking.final_weights[s][k].second;
        REQUIRE(a.numel() == b.numel());
        CHECK(std::equal(a.data(), a.data() + a.numel(), b.data()));
      }
    }
  }
}

TEST_CASE("mpi runtime: PW_ALLREDUCE other than overlapped or blocking is refused on every rank") {
  const models::Model model = small_model("mlp");
  const planner::Plan plan = even_plan(model, world().size(), 4, 2, ScheduleKind::one_f_one_b, false);
  ::setenv("PW_ALLREDUCE", "ring", 1);
  CHECK_THROWS_WITH_AS(run_pipeline_ranks(model, plan, testing::compare_options(), world()),
                       "PW_ALLREDUCE: expected overlapped or blocking, got \"ring\"", RankInputError);
  ::unsetenv("PW_ALLREDUCE");
}

// The bucketed all-reduce over MPI (PW_ALLREDUCE_BUCKET_BYTES=1: one ring per gradient tensor,
// started layer by layer inside the replica's last backward, several rings in flight at once
// on the tags of their own rounds) against blocking: bit-identical losses and final weights.
TEST_CASE(
    "mpi runtime: 2 x 2 replicas, per-tensor buckets train bit for bit as blocking (gpipe, 1f1b, "
    "pipedream-async)") {
  if (world().size() != 4) return;
  const models::Model model = small_model("mlp");
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::pipedream_async}) {
    CAPTURE(planner::to_string(kind));
    const planner::Plan plan = two_by_two_replicas(model, kind);
    const PipelineRunOptions o = testing::compare_options();
    ::setenv("PW_ALLREDUCE_BUCKET_BYTES", "1", 1);
    const PipelineRunResult bucketed = run_pipeline_ranks(model, plan, o, world());
    ::unsetenv("PW_ALLREDUCE_BUCKET_BYTES");
    ::setenv("PW_ALLREDUCE", "blocking", 1);
    const PipelineRunResult blocking = run_pipeline_ranks(model, plan, o, world());
    ::unsetenv("PW_ALLREDUCE");
    CHECK(bucketed.losses == blocking.losses);
    if (world().rank() != 0) continue;
    REQUIRE(bucketed.final_weights.size() == blocking.final_weights.size());
    int compared = 0;
    for (size_t s = 0; s < bucketed.final_weights.size(); ++s) {
      REQUIRE(bucketed.final_weights[s].size() == blocking.final_weights[s].size());
      for (size_t k = 0; k < bucketed.final_weights[s].size(); ++k) {
        CAPTURE(bucketed.final_weights[s][k].first);
        const Tensor& a = bucketed.final_weights[s][k].second;
        const Tensor& b = blocking.final_weights[s][k].second;
        REQUIRE(a.numel() == b.numel());
        CHECK(std::equal(a.data(), a.data() + a.numel(), b.data()));
        ++compared;
      }
    }
    CHECK(compared > 0);
  }
}

TEST_CASE("mpi runtime: PW_ALLREDUCE_BUCKET_BYTES that is not a byte count is refused on every rank") {
  const models::Model model = small_model("mlp");
  const planner::Plan plan = even_plan(model, world().size(), 4, 2, ScheduleKind::one_f_one_b, false);
  ::setenv("PW_ALLREDUCE_BUCKET_BYTES", "4MiB", 1);
  CHECK_THROWS_WITH_AS(run_pipeline_ranks(model, plan, testing::compare_options(), world()),
                       "PW_ALLREDUCE_BUCKET_BYTES: expected a byte count >= 0, got \"4MiB\"", RankInputError);
  ::unsetenv("PW_ALLREDUCE_BUCKET_BYTES");
}

TEST_CASE("mpi runtime: --gpus other than 1 is refused on every rank (each rank runs on one GPU)") {
  const models::Model model = small_model("mlp");
  const planner::Plan plan = even_plan(model, world().size(), 4, 2, ScheduleKind::one_f_one_b, false);
  PipelineRunOptions o = testing::compare_options();
  o.device = Device::cuda(0);
  o.gpus = 2;
  CHECK_THROWS_WITH_AS(run_pipeline_ranks(model, plan, o, world()),
                       "--gpus: each MPI rank runs on one GPU (got 2); start one rank per pipeline device instead",
                       RankInputError);
}

namespace {

std::chrono::steady_clock::time_point deadline() { return std::chrono::steady_clock::now() + std::chrono::seconds(60); }

// `name`_<rank 0's process id> under the temporary directory: the same path on every rank of
// the job, another one for every job. Collective.
std::filesystem::path job_temp_dir(const std::string& name) {
  const double pid = world().allreduce_max({world().rank() == 0 ? static_cast<double>(::getpid()) : 0.0}, deadline(),
                                           "the test's directory")[0];
  return std::filesystem::temp_directory_path() / (name + "_" + std::to_string(static_cast<long>(pid)));
}

// Runs `plan` 4 steps whole, then stopped after step 2 with a checkpoint in `name` (under the
// temporary directory, named with rank 0's process id) and resumed: the resumed steps' losses
// and, on rank 0, the final weights equal the whole run's bit for bit. Only rank 0 may touch the
// checkpoint: the other ranks are given a directory that does not exist, as on a host without
// rank 0's file system, and it must still not exist afterwards.
void check_stop_and_resume_bitwise(const models::Model& model, const planner::Plan& plan, const std::string& name) {
  const std::filesystem::path dir = job_temp_dir(name);
  PipelineRunOptions o = testing::compare_options();
  o.steps = 4;
  const PipelineRunResult whole = run_pipeline_ranks(model, plan, o, world());
  const std::filesystem::path elsewhere = dir.string() + "_rank_" + std::to_string(world().rank());
  const std::filesystem::path own = world().rank() == 0 ? dir : elsewhere;
  o.checkpoint_dir = own.string();
  int polls = 0;
  o.stop_requested = [&polls] { return ++polls == 2; };
  const PipelineRunResult first = run_pipeline_ranks(model, plan, o, world());
  CHECK(first.checkpoint_step == 2);
  o.checkpoint_dir.clear();
  o.stop_requested = {};
  o.resume_dir = own.string();
  const PipelineRunResult rest = run_pipeline_ranks(model, plan, o, world());
  world().barrier(deadline(), "the test's resumed run");
  CHECK_FALSE(std::filesystem::exists(elsewhere));
  if (world().rank() == 0) std::filesystem::remove_all(dir);
  CHECK(rest.first_step == 2);
  REQUIRE(rest.losses.size() == 2);
  REQUIRE(whole.losses.size() == 4);
  for (size_t i = 0; i < 2; ++i) CHECK(rest.losses[i] == whole.losses[i + 2]);  // bitwise
  if (world().rank() != 0) {
    CHECK(rest.final_weights.empty());
    return;
  }
  REQUIRE(whole.final_weights.size() == static_cast<size_t>(plan.num_stages()));
  REQUIRE(rest.final_weights.size() == whole.final_weights.size());
  for (size_t s = 0; s < whole.final_weights.size(); ++s) {
    REQUIRE(!whole.final_weights[s].empty());
    REQUIRE(rest.final_weights[s].size() == whole.final_weights[s].size());
    for (size_t k = 0; k < whole.final_weights[s].size(); ++k) {
      CAPTURE(whole.final_weights[s][k].first);
      const Tensor& a = rest.final_weights[s][k].second;
      const Tensor& b = whole.final_weights[s][k].second;
      REQUIRE(a.numel() == b.numel());
      CHECK(std::equal(a.data(), a.data() + a.numel(), b.data()));
    }
  }
}

}  // namespace

// Rank 0 writes the other ranks' stages as they send them, one at a time (run_ranks.cc).
TEST_CASE("mpi runtime: one rank per stage, stopped at step 2 and resumed, equals the uninterrupted run bitwise") {
  const models::Model model = small_model("gpt");
  check_stop_and_resume_bitwise(
      model, even_plan(model, world().size(), /*micro-batches=*/4, /*size=*/2, ScheduleKind::one_f_one_b, false),
      "pw_mpi_resume");
}

// Rank 0 reads every stage for the others (rank_checkpoint.h); a stage file it finds corrupt
// is its input error, agreed on by every rank, which all leave the protocol without waiting.
TEST_CASE("mpi runtime: a corrupt stage file of another rank's stage fails the resume on every rank, naming the file") {
  const std::filesystem::path dir = job_temp_dir("pw_mpi_corrupt_resume");
  const models::Model model = small_model("gpt");
  const planner::Plan plan = even_plan(model, world().size(), 4, 2, ScheduleKind::one_f_one_b, false);
  PipelineRunOptions o = testing::compare_options();
  o.steps = 2;
  o.checkpoint_dir = dir.string();
  CHECK(run_pipeline_ranks(model, plan, o, world()).checkpoint_step == 2);
  const std::string last = "stage-" + std::to_string(plan.num_stages() - 1) + ".step-2.bin";
  if (world().rank() == 0) {  // flip a bit of the stored checksum
    std::fstream f(dir / last, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    const char c = static_cast<char>(f.get() ^ 1);
    f.seekp(-1, std::ios::end);
    f.put(c);
  }
  world().barrier(deadline(), "the test's corrupted file");
  o.checkpoint_dir.clear();
  o.steps = 4;
  o.resume_dir = dir.string();
  try {
    run_pipeline_ranks(model, plan, o, world());
    CHECK(false);
  } catch (const RankInputError& e) {
    CHECK(e.first_failed_rank() == 0);
    CHECK(e.all_on_input());
    if (world().rank() == 0) {
      CHECK(std::string(e.what()).find(last) != std::string::npos);
      CHECK(std::string(e.what()).find("checksum mismatch") != std::string::npos);
    }
  }
  world().barrier(deadline(), "the test's failed resume");
  if (world().rank() == 0) std::filesystem::remove_all(dir);
}

// Rank 0 writes the checkpoint's stages while the others wait to send theirs: that wait is on
// rank 0's disk, not on a step, so a write slower than the step deadline fails nothing (it did:
// the senders timed out, named rank 0 as stopped and the job lost its checkpoint).
TEST_CASE("mpi runtime: a checkpoint written slower than the step deadline completes on every rank") {
  const std::filesystem::path dir = job_temp_dir("pw_mpi_slow_checkpoint");
  const models::Model model = small_model("gpt");
  const planner::Plan plan = even_plan(model, world().size(), 4, 2, ScheduleKind::one_f_one_b, false);
  PipelineRunOptions o = testing::compare_options();
  o.steps = 2;
  o.checkpoint_dir = dir.string();
  o.step_deadline = std::chrono::milliseconds(3000);
  o.test_checkpoint_write_delay = std::chrono::milliseconds(4000);
  CHECK(run_pipeline_ranks(model, plan, o, world()).checkpoint_step == 2);
  world().barrier(deadline(), "the test's slow checkpoint");
  if (world().rank() == 0) {
    CHECK(checkpoint_step(dir.string()) == 2);
    std::filesystem::remove_all(dir);
  }
}

// Replicated stages checkpoint replica 0's state and every replica's rank resumes from it: a
// 2 x 2 run stopped after step 2 and resumed equals the uninterrupted run bit for bit. 4 ranks.
TEST_CASE("mpi runtime: 2 x 2 replicas stopped at step 2 and resumed equal the uninterrupted run bitwise") {
  if (world().size() != 4) return;
  const models::Model model = small_model("gpt");
  check_stop_and_resume_bitwise(model, two_by_two_replicas(model, ScheduleKind::one_f_one_b),
                                "pw_mpi_replicated_resume");
}
