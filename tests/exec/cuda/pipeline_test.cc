// The pipeline runtime on one GPU (exec/runtime/run_pipeline.h with PipelineRunOptions::device):
// S stages on S CUDA streams against one stream, against the host, and resumed from a
// checkpoint (needs a GPU).
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

namespace pw::exec::cuda {
namespace {

namespace fs = std::filesystem;
using planner::ScheduleKind;

constexpr int kMicroBatches = testing::kGptMicroBatches;

using testing::gpt_4x256;
using testing::gpu_run_options;

PipelineRunResult run(ScheduleKind kind, int stages, const PipelineRunOptions& o, bool tied = false) {
  const models::Model m = gpt_4x256(tied);
  const int chunks = kind == ScheduleKind::interleaved_1f1b ? 2 : 1;
  const planner::Plan plan = even_plan(m, stages, kMicroBatches, m.batch() / kMicroBatches, kind, false, chunks);
  return run_pipeline(m, plan, o);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t k = 0; k < a.numel(); ++k)
    if (a.data()[k] != b.data()[k]) return false;
  return true;
}

// Every stage's weights and optimizer state of `a`, concatenated in stage order, equal `b`'s
// bit for bit (the stages split them differently, the names and order are the same).
void check_same_weights(const PipelineRunResult& a, const PipelineRunResult& b) {
  std::vector<const std::pair<std::string, Tensor>*> wa, wb;
  for (const auto& st : a.final_weights)
    for (const auto& t : st) wa.push_back(&t);
  for (const auto& st : b.final_weights)
    for (const auto& t : st) wb.push_back(&t);
  // Optimizer state names carry the stage's own numbering: compare the layer weights only.
  const auto weights = [](const std::vector<const std::pair<std::string, Tensor>*>& v) {
    std::vector<const std::pair<std::string, Tensor>*> out;
    for (const auto* t : v)
      if (t->first.rfind("opt/", 0) != 0) out.push_back(t);
    return out;
  };
  const auto ka = weights(wa), kb = weights(wb);
  REQUIRE(ka.size() == kb.size());
  REQUIRE(!ka.empty());
  for (size_t i = 0; i < ka.size(); ++i) {
    CAPTURE(ka[i]->first);
    CHECK(ka[i]->first == kb[i]->first);
    CHECK(same_bits(ka[i]->second, kb[i]->second));
  }
}

TEST_CASE("run on a GPU: 4 stages on 4 streams train bitwise as 1 stream (gpipe, 1f1b, zb-h1, interleaved)") {
  const Device gpu = Device::cuda(0);
  for (ScheduleKind kind :
       {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1, ScheduleKind::interleaved_1f1b}) {
    CAPTURE(planner::to_string(kind));
    // One stream runs the same per-stage micro-batch order: interleaved's is 1f1b's.
    const ScheduleKind one = kind == ScheduleKind::interleaved_1f1b ? ScheduleKind::one_f_one_b : kind;
    const PipelineRunResult ref = run(one, 1, gpu_run_options(gpu));
    const PipelineRunResult got = run(kind, 4, gpu_run_options(gpu));
    REQUIRE(got.losses.size() == 10);
    REQUIRE(ref.losses.size() == 10);
    for (size_t i = 0; i < ref.losses.size(); ++i) {
      CAPTURE(i);
      CHECK(std::isfinite(got.losses[i]));
      CHECK(got.losses[i] == ref.losses[i]);
    }
    CHECK(got.losses.back() < got.losses.front());
    check_same_weights(got, ref);
    // The trace: every op of every worker, times from CUDA events, ops of one worker in order.
    int ops = 0;
    std::vector<int64_t> last_end(4, 0);
    for (const auto& e : got.trace.events) {
      if (e.is_transfer) continue;
      ++ops;
      CHECK(e.end_ns >= e.start_ns);
      CHECK(e.start_ns >= last_end.at(e.device));
      last_end[e.device] = e.end_ns;
    }
    CHECK(ops > 10 * 4 * kMicroBatches);
  }
}

TEST_CASE("run on a GPU: pipedream-async and 2bw on 4 streams follow the host runtime within 1e-4") {
  for (ScheduleKind kind : {ScheduleKind::pipedream_async, ScheduleKind::two_bw}) {
    CAPTURE(planner::to_string(kind));
    const PipelineRunResult host = run(kind, 4, gpu_run_options(Device::cpu()));
    const PipelineRunResult gpu = run(kind, 4, gpu_run_options(Device::cuda(0)));
    REQUIRE(gpu.losses.size() == host.losses.size());
    for (size_t i = 0; i < host.losses.size(); ++i) {
      CAPTURE(i);
      CHECK(std::isfinite(gpu.losses[i]));
      CHECK(std::abs(gpu.losses[i] - host.losses[i]) <= 1e-4 * std::abs(host.losses[i]));
    }
  }
}

// The embedding (stage 0) and the tied head (stage 3) on two streams: the head's copy of the
// table, its gradient and the summed gradient live where their stages run.
TEST_CASE("run on a GPU: a tied embedding split over 4 streams follows the host runtime within 1e-4") {
  const PipelineRunResult host = run(ScheduleKind::gpipe, 4, gpu_run_options(Device::cpu()), true);
  const PipelineRunResult gpu = run(ScheduleKind::gpipe, 4, gpu_run_options(Device::cuda(0)), true);
  REQUIRE(gpu.losses.size() == host.losses.size());
  for (size_t i = 0; i < host.losses.size(); ++i) {
    CAPTURE(i);
    CHECK(std::isfinite(gpu.losses[i]));
    CHECK(std::abs(gpu.losses[i] - host.losses[i]) <= 1e-4 * std::abs(host.losses[i]));
  }
  CHECK(gpu.losses.back() < gpu.losses.front());
}

TEST_CASE("run on a GPU: a 4-stream pipeline stopped at step 5 and resumed is bitwise the uninterrupted run") {
  const fs::path dir = fs::temp_directory_path() / ("pw_gpu_pipeline_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const PipelineRunResult whole = run(ScheduleKind::one_f_one_b, 4, gpu_run_options(Device::cuda(0)));
  PipelineRunOptions first = gpu_run_options(Device::cuda(0));
  first.checkpoint_dir = dir.string();
  int polls = 0;
  first.stop_requested = [&polls] { return ++polls == 5; };
  const PipelineRunResult a = run(ScheduleKind::one_f_one_b, 4, first);
  CHECK(a.stopped);
  REQUIRE(a.checkpoint_step == 5);
  PipelineRunOptions rest = gpu_run_options(Device::cuda(0));
  rest.resume_dir = dir.string();
  const PipelineRunResult b = run(ScheduleKind::one_f_one_b, 4, rest);
  fs::remove_all(dir);
  CHECK(b.first_step == 5);
  REQUIRE(b.losses.size() == 5);
  for (size_t i = 0; i < 5; ++i) CHECK(b.losses[i] == whole.losses[i + 5]);
  check_same_weights(b, whole);
}

}  // namespace
}  // namespace pw::exec::cuda
