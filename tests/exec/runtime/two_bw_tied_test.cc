// PipeDream-2BW (double-buffered weights, one step of delay) and tied embeddings split across
// stages (Megatron-style summed gradients), each against a plain reference written here.
#include <doctest/doctest.h>

#include "exec/runtime/pipeline_runtime.h"
#include "models/error.h"
#include "planner/schedule_gen.h"
#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;
using namespace pw::exec::testing;
using planner::ScheduleKind;

namespace {
constexpr int64_t kTiedBatch = 8;

// Plain 2BW: W(t+1) = W(t) - lr * grad(W(t-1)) on the whole mini-batch, W(-1) = W(0).
struct TwoBwReference {
  std::unique_ptr<Network> net;
  std::vector<double> losses;
};

TwoBwReference two_bw_reference(const models::Model& model, int steps) {
  TwoBwReference r;
  r.net = std::make_unique<Network>(model, 7);
  Network& net = *r.net;
  // One stage, one micro-batch of the whole mini-batch, driven op by op (synchronous mode:
  // the loss of the mini-batch with weight 1), with W(t-1) installed around F and B.
  LayerStageCompute comp(net, {{0, net.size(), false}}, {kTiedBatch, kTiedBatch, false, true}, tiny_data(net),
                         plain_sgd());
  auto params = net.parameters();
  std::vector<Tensor> previous;  // W(t-1)
  for (Tensor* p : params) previous.push_back(p->clone());
  for (int t = 0; t < steps; ++t) {
    const OpContext op{t, 0, 0, -1};
    for (size_t i = 0; i < params.size(); ++i) std::swap(*params[i], previous[i]);
    comp.forward(op, {});
    comp.backward(op, {});
    for (size_t i = 0; i < params.size(); ++i) std::swap(*params[i], previous[i]);
    for (size_t i = 0; i < params.size(); ++i)  // W(t) is the version of t+1
      std::copy(params[i]->data(), params[i]->data() + params[i]->numel(), previous[i].data());
    comp.step(0, t);
    r.losses.push_back(comp.loss(t));
  }
  return r;
}

}  // namespace

TEST_CASE("2bw: double-buffered weights with a one-step delay match the plain reference") {
  constexpr int kSteps = 4;
  for (const std::string family : {"mlp", "gpt"}) {
    const models::Model model = tiny_model(family, kTiedBatch);
    const TwoBwReference ref = two_bw_reference(model, kSteps);
    CHECK(ref.losses[0] == doctest::Approx(ref.losses[1]).epsilon(0.2));  // step 1 still on W(0)
    for (int S : {2, 3})
      for (int M : {2, 4})
        for (bool recompute : {false, true}) {
          CAPTURE(family);
          CAPTURE(S);
          CAPTURE(M);
          CAPTURE(recompute);
          Network net(model, 7);
          ComputeConfig cc{kTiedBatch, kTiedBatch / M, true, true};
          cc.double_buffered = true;
          LayerStageCompute comp(net, even_ranges(net.size(), S, recompute), cc, tiny_data(net), plain_sgd());
          PipelineRuntime rt(planner::make_schedule(ScheduleKind::two_bw, S, M), comp, one_thread_options());
          for (int i = 0; i < kSteps; ++i) {
            rt.run_iteration();
            CHECK(comp.loss(i) == doctest::Approx(ref.losses[i]).epsilon(1e-5));
            for (int s = 0; s < S; ++s) CHECK(comp.weight_version(s) == i + 1);  // one update per mini-batch
          }
          CHECK(max_relative_difference(net.parameters(), ref.net->parameters()) < 1e-5);
          // Two versions of the weights are held: memory counts the second copy.
          CHECK(comp.memory_bytes(0) > comp.weights_optimizer_bytes(0));
        }
  }
}

TEST_CASE("2bw: the step delay is real (first two mini-batches run on the initial weights)") {
  const models::Model model = tiny_model("mlp", kTiedBatch);
  Network net(model, 7);
  ComputeConfig cc{kTiedBatch, kTiedBatch / 2, true, true};
  cc.double_buffered = true;
  LayerStageCompute comp(
      net, even_ranges(net.size(), 2, false), cc,
      [](int, int64_t first, int64_t count, Tensor* d, Tensor* t) {  // the same batch every step
        for (Tensor* x : {d, t})
          if (x)
            for (int64_t i = 0; i < x->numel(); ++i) x->data()[i] = 0.01f * static_cast<float>(i + first);
      },
      plain_sgd());
  PipelineRuntime rt(planner::make_schedule(ScheduleKind::two_bw, 2, 2), comp, one_thread_options());
  for (int i = 0; i < 3; ++i) rt.run_iteration();
  CHECK(comp.loss(1) == comp.loss(0));  // W(-1) = W(0)
  CHECK(comp.loss(2) != comp.loss(1));  // W(1)
}

namespace {
models::Model tied_gpt() {
  models::ZooOptions o;
  o.batch = kTiedBatch;
  o.layers = 2;
  o.d_model = 16;
  o.heads = 2;
  o.ffn = 32;
  o.seq = 8;
  o.vocab = 32;
  o.tied_embeddings = true;
  return models::build_zoo_model("gpt", o);
}
}  // namespace

TEST_CASE("tied embeddings split across stages: summed gradients match one shared table") {
  constexpr int kSteps = 3;
  const models::Model model = tied_gpt();
  Network ref(model, 7);
  CHECK(ref.tied_pair().head >= 0);
  std::vector<double> ref_losses;
  {
    LayerStageCompute comp(ref, {{0, ref.size(), false}}, {kTiedBatch, kTiedBatch, false, true}, tiny_data(ref),
                           plain_sgd());
    PipelineRuntime rt(planner::make_schedule(ScheduleKind::gpipe, 1, 1), comp, one_thread_options());
    for (int i = 0; i < kSteps; ++i) {
      rt.run_iteration();
      ref_losses.push_back(comp.loss(i));
    }
  }
  CHECK(ref_losses[2] < ref_losses[0]);
  int runs = 0;
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1})
    for (int S : {2, 3, 4}) {
      CAPTURE(planner::to_string(kind));
      CAPTURE(S);
      Network net(model, 7);
      LayerStageCompute comp(net, even_ranges(net.size(), S, S == 3), {kTiedBatch, 2, false, true}, tiny_data(net),
                             plain_sgd());
      PipelineRuntime rt(planner::make_schedule(kind, S, 4), comp, one_thread_options());
      for (int i = 0; i < kSteps; ++i) {
        rt.run_iteration();
        CHECK(comp.loss(i) == doctest::Approx(ref_losses[i]).epsilon(1e-5));
      }
      CHECK(max_relative_difference(net.parameters(), ref.parameters()) < 1e-5);
      // The head's stage holds its own copy of the table (and its gradient).
      CHECK(comp.weights_optimizer_bytes(S - 1) > 0);
      ++runs;
    }
  CHECK(runs == 9);
  // Asynchronous schedules cannot split the tie.
  Network net(model, 7);
  ComputeConfig cc{kTiedBatch, 2, true, true};
  CHECK_THROWS_AS(LayerStageCompute(net, even_ranges(net.size(), 2, false), cc, tiny_data(net), plain_sgd()),
                  InputError);
}
