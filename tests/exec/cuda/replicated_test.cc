// Replicated stages on one GPU (exec/runtime/run_pipeline.h with PipelineRunOptions::device and
// a plan whose stage 0 has 2 replicas): every replica on a stream slot of its own, the ring
// all-reduce staged through the host (exec/runtime/replica_allreduce.h). Against the host
// runtime's replicated run of the same plan, the replicas against each other, and resumed from
// a checkpoint (needs a GPU).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "exec/runtime/run_pipeline.h"
#include "models/zoo.h"
#include "planner/schedule.h"
#include "tests/exec/cuda/gpu_pipeline.h"

namespace pw::exec::cuda::replicated {
namespace {

namespace fs = std::filesystem;
using planner::ScheduleKind;

constexpr int kMicroBatches = testing::kGptMicroBatches;
const std::vector<int> kReplicas{2, 1};  // stage 0 on devices 0, 1; stage 1 on device 2

using testing::gpt_4x256;
using testing::gpu_run_options;

planner::Plan replicated_plan(const models::Model& m, ScheduleKind kind) {
  planner::Plan p = even_plan(m, 2, kMicroBatches, m.batch() / kMicroBatches, kind, false);
  int next = 0;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    p.stages[s].devices.clear();
    for (int i = 0; i < kReplicas[s]; ++i) p.stages[s].devices.push_back(next++);
  }
  p.num_devices_used = next;
  return p;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t k = 0; k < a.numel(); ++k)
    if (a.data()[k] != b.data()[k]) return false;
  return true;
}

// Replica 1 of stage 0 holds exactly replica 0's weights and optimizer state (host copies).
void check_replicas_identical(const PipelineRunResult& r) {
  REQUIRE(r.replica_final_weights.size() == 1);
  const std::vector<NamedTensors>& w = r.replica_final_weights[0];
  REQUIRE(w.size() == 2);
  CHECK(w[1].empty());  // stage 1 has one replica
  REQUIRE(w[0].size() == r.final_weights[0].size());
  REQUIRE(!w[0].empty());
  for (size_t k = 0; k < w[0].size(); ++k) {
    CAPTURE(w[0][k].first);
    CHECK(w[0][k].first == r.final_weights[0][k].first);
    CHECK(same_bits(w[0][k].second, r.final_weights[0][k].second));
  }
}

void check_same_weights(const PipelineRunResult& a, const PipelineRunResult& b) {
  REQUIRE(a.final_weights.size() == b.final_weights.size());
  for (size_t s = 0; s < a.final_weights.size(); ++s) {
    REQUIRE(a.final_weights[s].size() == b.final_weights[s].size());
    for (size_t k = 0; k < a.final_weights[s].size(); ++k) {
      CAPTURE(a.final_weights[s][k].first);
      CHECK(same_bits(a.final_weights[s][k].second, b.final_weights[s][k].second));
    }
  }
}

TEST_CASE(
    "replicated stages on a GPU: stage 0 on 2 streams follows the host runtime within 1e-4 (gpipe, 1f1b, "
    "pipedream-async)") {
  const models::Model m = gpt_4x256();
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::pipedream_async}) {
    CAPTURE(planner::to_string(kind));
    const planner::Plan plan = replicated_plan(m, kind);
    const PipelineRunResult host = run_pipeline(m, plan, gpu_run_options(Device::cpu()));
    const PipelineRunResult gpu = run_pipeline(m, plan, gpu_run_options(Device::cuda(0)));
    REQUIRE(gpu.losses.size() == 10);
    REQUIRE(host.losses.size() == 10);
    for (size_t i = 0; i < host.losses.size(); ++i) {
      CAPTURE(i);
      CHECK(std::isfinite(gpu.losses[i]));
      CHECK(std::abs(gpu.losses[i] - host.losses[i]) <= 1e-4 * std::abs(host.losses[i]));
    }
    CHECK(gpu.losses.back() < gpu.losses.front());
    check_replicas_identical(gpu);
    // Three workers, each on a stream slot of its own.
    CHECK(gpu.lanes == std::vector<std::string>{"cuda:0", "cuda:0/stream1", "cuda:0/stream2"});
    int allreduces = 0;
    for (const auto& e : gpu.trace.events) allreduces += !e.is_transfer && e.kind == planner::OpKind::allreduce;
    // Both replicas of stage 0 every step: once at the flush, or after each of their backwards.
    CHECK(allreduces == 10 * (kind == ScheduleKind::pipedream_async ? kMicroBatches : 2));
  }
}

TEST_CASE("replicated stages on a GPU: a run stopped at step 5 and resumed is bitwise the uninterrupted run") {
  const fs::path dir = fs::temp_directory_path() / ("pw_gpu_replicated_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const models::Model m = gpt_4x256();
  const planner::Plan plan = replicated_plan(m, ScheduleKind::one_f_one_b);
  const PipelineRunResult whole = run_pipeline(m, plan, gpu_run_options(Device::cuda(0)));
  PipelineRunOptions first = gpu_run_options(Device::cuda(0));
  first.checkpoint_dir = dir.string();
  int polls = 0;
  first.stop_requested = [&polls] { return ++polls == 5; };
  const PipelineRunResult a = run_pipeline(m, plan, first);
  CHECK(a.stopped);
  REQUIRE(a.checkpoint_step == 5);
  PipelineRunOptions rest = gpu_run_options(Device::cuda(0));
  rest.resume_dir = dir.string();
  const PipelineRunResult b = run_pipeline(m, plan, rest);
  fs::remove_all(dir);
  CHECK(b.first_step == 5);
  REQUIRE(b.losses.size() == 5);
  for (size_t i = 0; i < 5; ++i) CHECK(b.losses[i] == whole.losses[i + 5]);
  check_same_weights(b, whole);
  check_replicas_identical(b);
}

}  // namespace
}  // namespace pw::exec::cuda::replicated
