// Acceptance: pipelined training equals single-device training on the whole mini-batch.
#include <doctest/doctest.h>

#include "exec/runtime/pipeline_runtime.h"
#include "planner/schedule_gen.h"
#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;
using namespace pw::exec::testing;
using planner::ScheduleKind;

namespace {
constexpr int64_t kTrainingBatch = 8;
constexpr int kSteps = 3;

struct Reference {
  std::unique_ptr<Network> net;
  std::vector<double> losses;
};

// One stage, one micro-batch holding the whole mini-batch.
Reference train_reference(const std::string& family) {
  Reference r;
  r.net = std::make_unique<Network>(tiny_model(family, kTrainingBatch), 7);
  LayerStageCompute comp(*r.net, {{0, r.net->size(), false}}, {kTrainingBatch, kTrainingBatch, false, true},
                         tiny_data(*r.net), plain_sgd());
  PipelineRuntime rt(planner::make_schedule(ScheduleKind::gpipe, 1, 1), comp, one_thread_options());
  for (int i = 0; i < kSteps; ++i) {
    rt.run_iteration();
    r.losses.push_back(comp.loss(i));
  }
  return r;
}

}  // namespace

TEST_CASE("runtime training: pipelines equal one-device training (gpipe, 1f1b, zb-h1, interleaved, recompute on/off)") {
  const ScheduleKind kinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1,
                                ScheduleKind::interleaved_1f1b};
  for (const std::string family : {"mlp", "gpt"}) {
    const Reference ref = train_reference(family);
    CHECK(ref.losses[2] < ref.losses[0]);  // it trains
    const int layers = ref.net->size();
    // One network for every configuration (its oneDNN primitives are created once), reset to
    // the same initial weights before each run.
    Network net(tiny_model(family, kTrainingBatch), 7);
    std::vector<Tensor> init;
    for (Tensor* p : net.parameters()) init.push_back(p->clone());
    int runs = 0;
    for (ScheduleKind kind : kinds)
      for (int S : {1, 2, 3, 4})
        for (int M : {1, 2, 4, 8})
          for (bool recompute : {false, true}) {
            const int chunks = kind == ScheduleKind::interleaved_1f1b ? 2 : 1;
            if (kind == ScheduleKind::interleaved_1f1b && (M % S != 0 || S * chunks > layers)) continue;
            CAPTURE(family);
            CAPTURE(planner::to_string(kind));
            CAPTURE(S);
            CAPTURE(M);
            CAPTURE(recompute);
            auto params = net.parameters();
            for (size_t i = 0; i < params.size(); ++i)
              std::copy(init[i].data(), init[i].data() + init[i].numel(), params[i]->data());
            net.zero_grad();
            LayerStageCompute comp(net, even_ranges(layers, S * chunks, recompute),
                                   {kTrainingBatch, kTrainingBatch / M, false, true}, tiny_data(net), plain_sgd());
            PipelineRuntime rt(planner::make_schedule(kind, S, M, chunks), comp, one_thread_options());
            std::vector<int64_t> live_after;
            for (int i = 0; i < kSteps; ++i) {
              rt.run_iteration();
              CHECK(comp.loss(i) == doctest::Approx(ref.losses[i]).epsilon(1e-5));
              live_after.push_back(Allocator::global().live_bytes());
            }
            // No leak: after every step the live bytes are back at the same baseline.
            CHECK(live_after[1] == live_after[0]);
            CHECK(live_after[2] == live_after[0]);
            CHECK(max_relative_difference(net.parameters(), ref.net->parameters()) < 1e-5);
            ++runs;
          }
    CHECK(runs >= 100);
  }
}

TEST_CASE("runtime training: the payload between stages carries skip connections (gpt cut inside a residual chain)") {
  Network net(tiny_model("gpt", kTrainingBatch), 7);
  // Stage boundaries right after the input layer: the embedding stage needs ":data" only.
  LayerStageCompute comp(net, {{0, 1, false}, {1, 3, false}, {3, net.size(), false}}, {kTrainingBatch, 4, false, true},
                         tiny_data(net), plain_sgd());
  CHECK(comp.cut(0) == std::vector<std::string>{"input"});
  CHECK(comp.cut(1) == std::vector<std::string>{"block0"});
}

TEST_CASE("runtime training: allocator live bytes return to weights + optimizer state after each step") {
  // A fresh allocator baseline: everything the pipeline holds after a step is its weights,
  // gradients and optimizer state (plus the data tensors' cached buffers, which are not live).
  const int64_t before = Allocator::global().live_bytes();
  {
    Network net(tiny_model("mlp", kTrainingBatch), 7);
    const int64_t weights = net.parameter_bytes();
    LayerStageCompute comp(net, even_ranges(net.size(), 2, false), {kTrainingBatch, 2, false, true}, tiny_data(net),
                           plain_sgd());
    PipelineRuntime rt(planner::make_schedule(ScheduleKind::one_f_one_b, 2, 4), comp, one_thread_options());
    for (int i = 0; i < 3; ++i) {
      rt.run_iteration();
      int64_t wo = comp.weights_optimizer_bytes(0) + comp.weights_optimizer_bytes(1);
      CHECK(wo == 3 * weights);  // parameters + gradients + momentum
      CHECK(Allocator::global().live_bytes() - before == wo);
      CHECK(comp.memory_bytes(0) + comp.memory_bytes(1) == wo);
    }
  }
  CHECK(Allocator::global().live_bytes() == before);
}

TEST_CASE("runtime training: re-materialization lowers a stage's peak activation bytes") {
  int64_t peak[2];
  for (bool recompute : {false, true}) {
    Network net(tiny_model("gpt", kTrainingBatch), 7);
    LayerStageCompute comp(net, even_ranges(net.size(), 2, recompute), {kTrainingBatch, 1, false, true}, tiny_data(net),
                           plain_sgd());
    PipelineRuntime rt(planner::make_schedule(ScheduleKind::gpipe, 2, 8), comp, one_thread_options());
    rt.run_iteration();
    peak[recompute] = comp.peak_activation_bytes(0);
  }
  CHECK(peak[1] < peak[0]);
}
