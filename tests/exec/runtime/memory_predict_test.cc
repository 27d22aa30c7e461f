// Memory prediction of `run --compare` (exec/run_compare.h): the measured profile's stash_bytes
// (exec/profiler.h) sum to what a LayerRange holds per micro-batch, and the per-worker peak the
// simulator predicts from it matches the peak the pipeline runtime measures (memory_bytes
// sampled between ops) for a small GPT over 2 stages under gpipe, 1f1b and zb-h1.
#include <doctest/doctest.h>

#include "exec/layers/common.h"
#include "exec/profile/profiler.h"
#include "exec/runtime/run_compare.h"
#include "exec/runtime/run_pipeline.h"
#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;

namespace {

models::Model small_gpt(int64_t batch) {
  models::ZooOptions o;
  o.batch = batch;
  o.layers = 4;
  o.d_model = 32;
  o.heads = 2;
  o.ffn = 64;
  o.seq = 32;
  o.vocab = 64;
  return models::build_zoo_model("gpt", o);
}

// input -> fc0 -> relu0 -> fc1 -> add(fc1, relu0) -> mse loss: relu0's output has two readers.
models::Model skip_mlp() {
  using models::LayerKind;
  const int64_t w = 16;
  std::vector<models::LayerSpec> l = {
      {"input", LayerKind::input, {}, {w}, {{"dim", w}}},
      {"fc0", LayerKind::linear, {"input"}, {w}, {{"in", w}, {"out", w}, {"bias", 1}}},
      {"relu0", LayerKind::relu, {"fc0"}, {w}, {}},
      {"fc1", LayerKind::linear, {"relu0"}, {w}, {{"in", w}, {"out", w}, {"bias", 1}}},
      {"add", LayerKind::residual_add, {"fc1", "relu0"}, {w}, {}},
      {"loss", LayerKind::mse_loss, {"add"}, {1}, {{"dim", w}}},
  };
  return models::Model("skip-mlp", std::move(l), 4);
}

// Bytes a range over [begin, end) holds for one forwarded micro-batch of `mb` samples.
int64_t range_stash(const models::Model& model, int begin, int end, int64_t mb) {
  Network net(model, 1);
  LayerRange r(net, begin, end);
  std::vector<Tensor> in;
  for (const BoundaryTensor& b : r.inputs()) {
    Tensor t(with_batch(mb, b.sample_shape));
    t.fill(0.5f);
    in.push_back(std::move(t));
  }
  r.forward(0, std::move(in));
  return r.stash_bytes(0);
}

}  // namespace

TEST_CASE("measured stash_bytes: a tensor with two readers is counted once, sums equal the range's stash") {
  const models::Model m = skip_mlp();
  MeasureOptions o;
  o.micro_batch = 4;
  o.reps = 1;
  o.warmup = 0;
  o.optimizer = "sgd";
  const models::Profile p = measure_profile(m, o);
  const int64_t act = 4 * 16 * 4;         // one [4 x 16] fp32 activation
  CHECK(p.layers[0].stash_bytes == 0);    // input (data loading)
  CHECK(p.layers[1].stash_bytes == act);  // fc0: its input
  CHECK(p.layers[3].stash_bytes == act);  // fc1: relu0's output, its first reader
  CHECK(p.layers[4].stash_bytes == act);  // add: fc1's output only (relu0's is fc1's)
  // Whole model in one range: everything but the fed data batch ([4 x 16], held as ":data").
  int64_t sum = 0;
  for (const auto& l : p.layers) sum += l.stash_bytes;
  CHECK(range_stash(m, 0, 6, 4) == sum + act);
  // Cut before fc1: the second range holds relu0's output once, as its boundary input.
  int64_t second = 0;
  for (int i = 3; i < 6; ++i) second += p.layers[i].stash_bytes;
  CHECK(range_stash(m, 3, 6, 4) == second);
}

TEST_CASE("run --compare: predicted per-worker peak memory is within 15% of the measured (gpt, gpipe, 1f1b, zb-h1)") {
  struct Case {
    planner::ScheduleKind kind;
    int m;
  };
  for (const Case c : {Case{planner::ScheduleKind::gpipe, 2}, Case{planner::ScheduleKind::gpipe, 4},
                       Case{planner::ScheduleKind::one_f_one_b, 4}, Case{planner::ScheduleKind::zb_h1, 4}}) {
    const int64_t mbs = 2;
    const models::Model model = small_gpt(mbs * c.m);
    const planner::Plan plan = even_plan(model, 2, c.m, mbs, c.kind, false);
    PipelineRunOptions o;
    o.steps = 2;
    o.threads_per_worker = 1;
    const PipelineRunResult r = run_pipeline(model, plan, o);
    const Prediction p = predict_from_measurement(model, plan, 1, o.optimizer);
    REQUIRE(r.peak_memory_bytes.size() == 2);
    REQUIRE(p.peak_memory_bytes.size() == 2);
    REQUIRE(p.working_bytes.size() == 2);
    for (int s = 0; s < 2; ++s) {
      const double measured = static_cast<double>(r.peak_memory_bytes[s]);
      const double predicted = static_cast<double>(p.peak_memory_bytes[s]);
      CAPTURE(to_string(c.kind));
      CAPTURE(c.m);
      CAPTURE(s);
      CAPTURE(r.peak_memory_bytes[s]);
      CAPTURE(p.peak_memory_bytes[s]);
      CHECK(predicted <= 1.15 * measured);
      CHECK(predicted >= measured / 1.15);
      CHECK(p.working_bytes[s] > 0);  // the blocks' transients, reported apart
      // The full simulation adds them while an op runs.
      CHECK(p.report.devices[s].peak_memory_bytes > p.peak_memory_bytes[s]);
    }
  }
}
