// Acceptance (replicated stages on the threaded runtime): a plan whose stage has two
// replicas trains as the unreplicated plan on the same mini-batch (gpipe, 1f1b: gradients
// summed at the flush), replicated pipedream-async trains as its reference (below), and the
// replicas of a stage hold bit-identical weights and optimizer state after every run.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "exec/layer.h"
#include "exec/runtime/device_lanes.h"
#include "exec/runtime/pipeline_runtime.h"
#include "exec/runtime/run_pipeline.h"
#include "exec/runtime/run_setup.h"
#include "models/zoo.h"
#include "tests/exec/runtime/same_training.h"

using namespace pw;
using namespace pw::exec;
using planner::ScheduleKind;
using testing::check_same_training;
namespace fs = std::filesystem;

namespace {

models::Model small_model(const std::string& family) { return testing::small_zoo_model(family, 2, 4); }

// The plan with stage s on replicas[s] devices (numbered stage by stage).
planner::Plan with_replicas(planner::Plan p, const std::vector<int>& replicas) {
  int next = 0;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    p.stages[s].devices.clear();
    for (int i = 0; i < replicas[s]; ++i) p.stages[s].devices.push_back(next++);
  }
  p.num_devices_used = next;
  return p;
}

PipelineRunOptions options() { return testing::compare_options(); }

// Every replica i >= 1 of a stage holds exactly replica 0's weights and optimizer state.
void check_replicas_identical(const PipelineRunResult& r, const std::vector<int>& replicas) {
  int most = 1;
  for (int n : replicas) most = std::max(most, n);
  REQUIRE(static_cast<int>(r.replica_final_weights.size()) == most - 1);
  for (int i = 1; i < most; ++i)
    for (size_t s = 0; s < replicas.size(); ++s) {
      const NamedTensors& w = r.replica_final_weights[i - 1][s];
      if (replicas[s] <= i) {
        CHECK(w.empty());
        continue;
      }
      REQUIRE(w.size() == r.final_weights[s].size());
      for (size_t k = 0; k < w.size(); ++k) {
        CAPTURE(w[k].first);
        const Tensor& a = w[k].second;
        const Tensor& b = r.final_weights[s][k].second;
        REQUIRE(a.numel() == b.numel());
        CHECK(std::equal(a.data(), a.data() + a.numel(), b.data()));
      }
    }
}

int count_allreduces(const sim::Trace& t) {
  int n = 0;
  for (const auto& e : t.events) n += !e.is_transfer && e.kind == planner::OpKind::allreduce;
  return n;
}

}  // namespace

TEST_CASE("replicated stages: stage 0 on 2 replicas trains as the unreplicated plan (gpipe, 1f1b, mlp and gpt)") {
  for (const std::string family : {"mlp", "gpt"})
    for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b}) {
      CAPTURE(family);
      CAPTURE(planner::to_string(kind));
      const models::Model model = small_model(family);
      const planner::Plan plain = even_plan(model, 2, /*micro-batches=*/4, /*size=*/2, kind, false);
      const planner::Plan rep = with_replicas(plain, {2, 1});
      const PipelineRunResult ref = run_pipeline(model, plain, options());
      const PipelineRunResult r = run_pipeline(model, rep, options());
      check_same_training(r, ref);
      check_replicas_identical(r, {2, 1});
      CHECK(count_allreduces(r.trace) == 3 * 2);  // one per replica of stage 0 and step
      CHECK(r.peak_memory_bytes.size() == 3);
    }
}

// PipeDream's replicated stages, as the runtime defines them (exec/runtime/run_pipeline.h):
// the k-th backward of every replica of a stage is all-reduced (averaged) and each replica
// applies the same update. With every stage on r replicas, each replica runs the 1F1B order
// of the unreplicated pipeline (same warm-up), and round k covers micro-batches kr..kr+r-1,
// i.e. the samples of micro-batch k of the same pipeline with r-times larger micro-batches. So
// the reference is that unreplicated pipedream-async plan (weight stashing, one update per
// micro-batch with its mean loss): same losses and weights up to float reordering.
TEST_CASE(
    "replicated stages: pipedream-async on 2 stages x 2 replicas trains as the unreplicated plan with "
    "2x micro-batches") {
  for (const std::string family : {"mlp", "gpt"}) {
    CAPTURE(family);
    const models::Model model = small_model(family);
    const planner::Plan ref_plan =
        even_plan(model, 2, /*micro-batches=*/2, /*size=*/4, ScheduleKind::pipedream_async, false);
    const planner::Plan rep = with_replicas(even_plan(model, 2, 4, 2, ScheduleKind::pipedream_async, false), {2, 2});
    const PipelineRunResult ref = run_pipeline(model, ref_plan, options());
    const PipelineRunResult r = run_pipeline(model, rep, options());
    check_same_training(r, ref);
    check_replicas_identical(r, {2, 2});
    CHECK(count_allreduces(r.trace) == 3 * 4 * 2);  // per step, stage and micro-batch
  }
}

TEST_CASE("replicated stages: pipedream-async with only stage 0 replicated keeps its replicas identical") {
  const models::Model model = small_model("mlp");
  const planner::Plan rep = with_replicas(even_plan(model, 2, 4, 2, ScheduleKind::pipedream_async, false), {2, 1});
  const PipelineRunResult r = run_pipeline(model, rep, options());
  for (double l : r.losses) CHECK(std::isfinite(l));
  check_replicas_identical(r, {2, 1});
  CHECK(count_allreduces(r.trace) == 3 * 4);
}

TEST_CASE("replicated stages: refusals name the plan and the reason") {
  const models::Model model = small_model("mlp");
  planner::Plan p = with_replicas(even_plan(model, 2, 4, 2, ScheduleKind::zb_h1, false), {2, 1});
  CHECK_THROWS_WITH_AS(run_pipeline(model, p, options()),
                       "plan: replicated stages run with gpipe, 1f1b or pipedream-async, not zb-h1", InputError);
  p = with_replicas(even_plan(model, 2, 4, 2, ScheduleKind::pipedream_async, false), {2, 1});
  PipelineRunOptions o = options();
  o.vertical_sync = true;
  CHECK_THROWS_WITH_AS(run_pipeline(model, p, o), "--vertical-sync: not supported with replicated stages yet",
                       InputError);
}

TEST_CASE("replicated stages on a GPU are not refused for their replicas: without a GPU the line names the device") {
  if (usable_gpu_count() > 0) return;  // the GPU tests run them (tests/exec/cuda/replicated_test.cc)
  const models::Model model = small_model("mlp");
  const planner::Plan p = with_replicas(even_plan(model, 2, 4, 2, ScheduleKind::gpipe, false), {2, 1});
  PipelineRunOptions o = options();
  o.device = Device::cuda(0);
  const std::string line = "--device cuda:0: " + unusable_reason(Device::cuda(0));
  CHECK_THROWS_WITH_AS(run_pipeline(model, p, o), line.c_str(), InputError);
  // An MPI rank's share on the GPU: the same line.
  CHECK_THROWS_WITH_AS(make_run_setup(model, p, o, {}, RankDevice{1, Device::cuda(0)}), line.c_str(), InputError);
}

TEST_CASE("replicated stages: an MPI rank's setup on the host has no lanes, as a threaded one") {
  const models::Model model = small_model("mlp");
  const planner::Plan p = with_replicas(even_plan(model, 2, 4, 2, ScheduleKind::gpipe, false), {2, 1});
  const RunSetup s = make_run_setup(model, p, options(), {}, RankDevice{1, Device::cpu()});
  CHECK(s.lanes.empty());
  CHECK(s.devices == 3);
  CHECK(s.net->layer_device(0) == Device::cpu());
}

TEST_CASE("an MPI rank's setup holds the weights of the stages it runs only, rank 0's too") {
  const models::Model model = small_model("mlp");
  const planner::Plan p = with_replicas(even_plan(model, 2, 4, 2, ScheduleKind::gpipe, false), {2, 1});
  const RunSetup whole = make_run_setup(model, p, options());
  const auto bytes_of = [](Network& net, int first, int end) {
    int64_t b = 0;
    for (int i = first; i < end; ++i)
      for (Tensor* t : net.layer(i).parameters()) b += t->bytes();
    return b;
  };
  const int64_t stage0 = bytes_of(*whole.net, p.stages[0].first_layer, p.stages[0].end_layer);
  const int64_t stage1 = bytes_of(*whole.net, p.stages[1].first_layer, p.stages[1].end_layer);
  REQUIRE(stage0 > 0);
  REQUIRE(stage1 > 0);
  CHECK(whole.net->parameter_bytes() == stage0 + stage1);
  // Ranks 0 and 1 run stage 0's replicas, rank 2 runs stage 1.
  const int64_t expected[] = {stage0, stage0, stage1};
  for (int rank = 0; rank < 3; ++rank) {
    CAPTURE(rank);
    const RunSetup s = make_run_setup(model, p, options(), {}, RankDevice{rank, Device::cpu()});
    CHECK(s.net->parameter_bytes() == expected[rank]);
  }
}

TEST_CASE("replicated stages: a run stopped at step 3 and resumed is bitwise the uninterrupted run (gpipe, async)") {
  const models::Model model = small_model("gpt");
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::pipedream_async}) {
    CAPTURE(planner::to_string(kind));
    const fs::path dir = fs::temp_directory_path() / ("pw_replicated_resume_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const std::vector<int> replicas{2, 1};
    const planner::Plan p = with_replicas(even_plan(model, 2, 4, 2, kind, false), replicas);
    PipelineRunOptions o = options();
    o.steps = 6;
    const PipelineRunResult whole = run_pipeline(model, p, o);
    o.checkpoint_dir = dir.string();
    int polls = 0;
    o.stop_requested = [&polls] { return ++polls == 3; };
    const PipelineRunResult first = run_pipeline(model, p, o);
    REQUIRE(first.checkpoint_step == 3);
    o.checkpoint_dir.clear();
    o.stop_requested = {};
    o.resume_dir = dir.string();
    const PipelineRunResult rest = run_pipeline(model, p, o);
    fs::remove_all(dir);
    CHECK(rest.first_step == 3);
    REQUIRE(rest.losses.size() == 3);
    REQUIRE(whole.losses.size() == 6);
    for (size_t i = 0; i < 3; ++i) CHECK(rest.losses[i] == whole.losses[i + 3]);  // bitwise
    check_replicas_identical(rest, replicas);
    for (size_t s = 0; s < replicas.size(); ++s)
      for (size_t k = 0; k < whole.final_weights[s].size(); ++k) {
        CAPTURE(whole.final_weights[s][k].first);
        const Tensor& a = rest.final_weights[s][k].second;
        const Tensor& b = whole.final_weights[s][k].second;
        CHECK(std::equal(a.data(), a.data() + a.numel(), b.data()));
      }
  }
}

TEST_CASE("replicated stages: pipedream-async with 3 micro-batches on 2 replicas runs iterations of 6") {
  const models::Model model = small_model("mlp");
  const planner::Plan p = with_replicas(even_plan(model, 2, 3, 2, ScheduleKind::pipedream_async, false), {2, 1});
  const planner::Plan run = plan_for_run(p);
  CHECK(run.num_micro_batches == 6);
  CHECK(run.batch == 12);
  CHECK(plan_for_run(run).num_micro_batches == 6);
  const PipelineRunResult r = run_pipeline(model, p, options());
  int forwards = 0;
  for (const auto& e : r.trace.events) forwards += !e.is_transfer && e.kind == planner::OpKind::F && e.stage == 0;
  CHECK(forwards == 3 * 6);
  check_replicas_identical(r, {2, 1});
}

namespace {

struct Trained {
  std::vector<double> losses;
  std::vector<std::vector<NamedTensors>> weights;  // per replica index: every stage's state
  int allreduces = 0;
};

// Three steps of `plan` on the threaded runtime with the all-reduce overlapped or blocking.
Trained train_replicated(const models::Model& model, const planner::Plan& given, bool overlap,
                         int64_t bucket_bytes = RuntimeOptions{}.allreduce_bucket_bytes) {
  const PipelineRunOptions o = options();
  const planner::Plan plan = plan_for_run(given);
  RunSetup setup = make_run_setup(model, plan, o);
  add_replica_computes(setup, model, plan, o);
  RuntimeOptions ro;
  ro.pin_threads = false;
  ro.threads_per_worker = 1;
  ro.timeout = o.timeout;
  ro.overlap_allreduce = overlap;
  ro.allreduce_bucket_bytes = bucket_bytes;
  PipelineRuntime rt(setup.schedule, device_computes(setup), ro);
  Trained t;
  for (int i = 0; i < o.steps; ++i) {
    setup.slicer->prepare(i);
    rt.run_iteration();
    t.losses.push_back(run_loss(setup, i));
  }
  t.weights.push_back(copy_stage_states(*setup.compute));
  for (auto& c : setup.replica_computes) t.weights.push_back(copy_stage_states(*c));
  t.allreduces = count_allreduces(rt.trace());
  return t;
}

// a and b trained alike bit for bit (losses, all-reduce count, every replica's weights and
// optimizer state), and every replica of a stage holds replica 0's bits. `replicas` per stage.
void check_bit_identical(const Trained& a, const Trained& b, const std::vector<int>& replicas) {
  CHECK(a.losses == b.losses);
  for (double l : a.losses) CHECK(std::isfinite(l));
  CHECK(a.allreduces == b.allreduces);
  const size_t most = static_cast<size_t>(*std::max_element(replicas.begin(), replicas.end()));
  REQUIRE(a.weights.size() == most);  // per replica index (stages with fewer replicas skipped)
  REQUIRE(b.weights.size() == most);
  int compared = 0;
  for (size_t i = 0; i < most; ++i)
    for (size_t s = 0; s < replicas.size(); ++s) {
      if (static_cast<int>(i) >= replicas[s]) continue;
      REQUIRE(a.weights[i][s].size() == b.weights[i][s].size());
      REQUIRE(a.weights[i][s].size() == a.weights[0][s].size());
      for (size_t k = 0; k < a.weights[i][s].size(); ++k) {
        CAPTURE(a.weights[i][s][k].first);
        const Tensor& x = a.weights[i][s][k].second;
        const Tensor& y = b.weights[i][s][k].second;
        const Tensor& z = a.weights[0][s][k].second;  // replica 0: replicas stay identical
        REQUIRE(x.numel() == y.numel());
        CHECK(std::equal(x.data(), x.data() + x.numel(), y.data()));
        CHECK(std::equal(x.data(), x.data() + x.numel(), z.data()));
        ++compared;
      }
    }
  CHECK(compared > 0);
}

}  // namespace

// The overlapped all-reduce (the default: started at the allreduce op, completed before the
// next op that touches the stage's gradients or weights) runs the same ring on the same values
// in the same order as the blocking one: the training is bit-identical, replicas included.
TEST_CASE(
    "replicated stages: overlapped and blocking all-reduce train bit for bit alike (2 x 2, 1f1b, gpipe, "
    "pipedream-async)") {
  const models::Model model = small_model("mlp");
  for (ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::gpipe, ScheduleKind::pipedream_async}) {
    CAPTURE(planner::to_string(kind));
    const planner::Plan rep = with_replicas(even_plan(model, 2, 4, 2, kind, false), {2, 2});
    const Trained a = train_replicated(model, rep, true);
    const Trained b = train_replicated(model, rep, false);
    CHECK(a.allreduces == 3 * (kind == ScheduleKind::pipedream_async ? 8 : 4));
    check_bit_identical(a, b, {2, 2});
  }
}

// Bucketed (one ring per gradient tensor, bucket_bytes = 1, started layer by layer inside the
// last backward) against blocking (one ring at the allreduce op): bit-identical losses, weights
// and optimizer state on every replica, also with 3 replicas, where a ring's sums depend on
// which chunk a value falls in (the buckets keep the whole vector's chunks).
TEST_CASE("replicated stages: bucketed overlapped all-reduce trains bit for bit as blocking (2 and 3 replicas)") {
  struct Case {
    ScheduleKind kind;
    std::vector<int> replicas;
    int micro_batches;
  };
  for (const std::string family : {"mlp", "gpt"})
    for (const Case& c : {Case{ScheduleKind::one_f_one_b, {3, 2}, 6}, Case{ScheduleKind::gpipe, {2, 3}, 6},
                          Case{ScheduleKind::pipedream_async, {2, 2}, 4}}) {
      CAPTURE(family);
      CAPTURE(planner::to_string(c.kind));
      const models::Model model = small_model(family);
      const planner::Plan rep = with_replicas(even_plan(model, 2, c.micro_batches, 1, c.kind, false), c.replicas);
      const Trained a = train_replicated(model, rep, true, /*bucket_bytes=*/1);
      const Trained b = train_replicated(model, rep, false);
      check_bit_identical(a, b, c.replicas);
    }
}
