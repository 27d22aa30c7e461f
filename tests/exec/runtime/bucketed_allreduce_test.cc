// The overlapped all-reduce really overlaps: on the threaded runtime, a replicated stage's
// compute reports its gradients final layer by layer (OpContext::grads_done) during its last
// backward, and the bucket of the last tensor is all-reduced while that backward still runs —
// the compute below waits, inside the backward, until it sees the sum. Only the last backward
// of each replica gets the hook, with k decreasing; blocking mode never sets it. And the real
// compute (LayerStageCompute) reports its layers in the order and counts the contract states.
#include <doctest/doctest.h>

#include <thread>

#include "exec/runtime/pipeline_runtime.h"
#include "exec/runtime/run_setup.h"
#include "planner/schedule_replicas.h"
#include "tests/exec/runtime/same_training.h"

using namespace pw;
using namespace pw::exec;

namespace {

// One stage, three gradient tensors of 4 floats, filled with replica+1 by each backward (so
// after the all-reduce of 2 replicas every value is 3).
class HookCompute final : public StageCompute {
 public:
  explicit HookCompute(int replica) : replica_(replica) {
    for (int i = 0; i < 3; ++i) grads_.emplace_back(std::vector<int64_t>{4});
  }
  int num_stages() const override { return 1; }
  std::vector<Tensor> forward(const OpContext&, std::vector<Tensor>) override { return {}; }
  std::vector<Tensor> backward_input(const OpContext&, std::vector<Tensor>) override { return {}; }
  void backward_weight(const OpContext&) override {}
  std::vector<Tensor> backward(const OpContext& c, std::vector<Tensor>) override {
    for (Tensor& g : grads_) g.fill(static_cast<float>(replica_ + 1));
    if (!c.grads_done) {
      ++plain_backwards;
      return {};
    }
    ++hooked_backwards;
    (*c.grads_done)(2);  // tensor 2 is final: its bucket starts
    // Still inside the backward: the bucket completes while we keep reporting (each call
    // progresses the rings). 30 s guard against a hang, not a timing threshold.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (grads_[2].data()[0] != 3.0f) {
      if (std::chrono::steady_clock::now() > give_up)
        throw std::runtime_error("bucket 0 never completed in the backward");
      (*c.grads_done)(2);
      std::this_thread::yield();
    }
    last_reduced_in_backward = grads_[2].data()[3];
    before_rest = grads_[0].data()[0];  // not reduced yet: its bucket has not started
    (*c.grads_done)(1);
    (*c.grads_done)(0);
    return {};
  }
  void step(int, int) override { stepped.push_back({grads_[0].data()[0], grads_[1].data()[0], grads_[2].data()[0]}); }
  std::vector<Tensor*> weight_gradients(int) override { return {&grads_[0], &grads_[1], &grads_[2]}; }

  int plain_backwards = 0, hooked_backwards = 0;
  float last_reduced_in_backward = 0, before_rest = 0;
  std::vector<std::vector<float>> stepped;

 private:
  int replica_;
  std::vector<Tensor> grads_;
};

RuntimeOptions options(bool overlap) {
  RuntimeOptions o;
  o.pin_threads = false;
  o.threads_per_worker = 1;
  o.timeout = std::chrono::seconds(60);
  o.overlap_allreduce = overlap;
  o.allreduce_bucket_bytes = 16;  // one tensor per bucket
  return o;
}

}  // namespace

TEST_CASE("bucketed all-reduce: the last tensor's bucket is reduced inside the last backward (gpipe, 1f1b)") {
  for (planner::ScheduleKind kind : {planner::ScheduleKind::gpipe, planner::ScheduleKind::one_f_one_b}) {
    CAPTURE(planner::to_string(kind));
    const planner::Schedule sch = planner::make_replicated_schedule(kind, {2}, 4, {true});
    HookCompute r0(0), r1(1);
    PipelineRuntime rt(sch, std::vector<StageCompute*>{&r0, &r1}, options(true));
    rt.run_iteration();
    rt.run_iteration();
    for (HookCompute* c : {&r0, &r1}) {
      CHECK(c->hooked_backwards == 2);  // per iteration the last of the replica's 2 micro-batches
      CHECK(c->plain_backwards == 2);   // ... and not the first
      CHECK(c->last_reduced_in_backward == 3.0f);
      CHECK(c->before_rest == static_cast<float>(c == &r0 ? 1 : 2));
      REQUIRE(c->stepped.size() == 2);
      for (const auto& v : c->stepped) CHECK(v == std::vector<float>{3, 3, 3});
    }
  }
}

TEST_CASE("bucketed all-reduce: blocking mode gives the compute no hook and the same sums") {
  const planner::Schedule sch = planner::make_replicated_schedule(planner::ScheduleKind::one_f_one_b, {2}, 4, {true});
  HookCompute r0(0), r1(1);
  PipelineRuntime rt(sch, std::vector<StageCompute*>{&r0, &r1}, options(false));
  rt.run_iteration();
  for (HookCompute* c : {&r0, &r1}) {
    CHECK(c->hooked_backwards == 0);
    CHECK(c->plain_backwards == 2);  // 2 micro-batches per replica
    REQUIRE(c->stepped.size() == 1);
    CHECK(c->stepped[0] == std::vector<float>{3, 3, 3});
  }
}

// LayerStageCompute's reports: mlp depth 4 on one stage is input fc0 relu0 fc1 relu1 fc2 relu2
// fc3 loss, each fc with weight and bias, so weight_gradients is 8 tensors and layer l's come
// after 2 x (fc layers before l). The backward reaches the layers last to first and reports,
// after each, how many tensors the earlier layers list: 8 (loss), 6 (fc3), 6, 4, 4, 2, 2, 0, 0.
// A fused BW reports; split, B does not and W does.
TEST_CASE("bucketed all-reduce: LayerStageCompute reports gradients final layer by layer (BW, and B then W)") {
  const models::Model model = testing::small_zoo_model("mlp", 2, 4);
  const PipelineRunOptions o = testing::compare_options();
  for (const bool fused : {true, false}) {
    CAPTURE(fused);
    RunSetup setup = make_run_setup(model, even_plan(model, 1, 1, 8, planner::ScheduleKind::gpipe, false), o);
    LayerStageCompute& c = *setup.compute;
    REQUIRE(c.weight_gradients(0).size() == 8);
    setup.slicer->prepare(0);
    std::vector<size_t> seen;
    const std::function<void(size_t)> done = [&](size_t k) { seen.push_back(k); };
    OpContext ctx{0, 0, 0, -1, &done};
    c.forward(ctx, {});
    if (fused) {
      c.backward(ctx, {});
    } else {
      c.backward_input(ctx, {});
      CHECK(seen.empty());
      c.backward_weight(ctx);
    }
    CHECK(seen == std::vector<size_t>{8, 6, 6, 4, 4, 2, 2, 0, 0});
  }
}
