// pipedream-async: the runtime against a plain, single-threaded reference of PipeDream's
// weight-stashing semantics (forward of j on the stage's latest weights, kept; backward of j
// on those kept weights; the update applied to the latest weights right after).
#include <doctest/doctest.h>

#include <map>

#include "exec/runtime/pipeline_runtime.h"
#include "planner/schedule_gen.h"
#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;
using namespace pw::exec::testing;
using planner::OpKind;

namespace {
constexpr int64_t kAsyncBatch = 8;

// Runs `iterations` of the schedule on `net`, ops in a dependency-respecting order, one at a time.
void reference_pipedream(Network& net, const planner::Schedule& sch, int iterations, int64_t mbs) {
  const int S = sch.num_stages;
  const auto ranges = even_ranges(net.size(), S, false);
  std::vector<std::unique_ptr<LayerRange>> stage;
  std::vector<std::unique_ptr<PlainSgd>> opt;
  for (const auto& r : ranges) {
    stage.push_back(std::make_unique<LayerRange>(net, r.begin, r.end));
    opt.push_back(std::make_unique<PlainSgd>(stage.back()->parameters(), stage.back()->gradients(), 0.1f, 0.9f));
  }
  const DataFn data = tiny_data(net);
  for (int it = 0; it < iterations; ++it) {
    std::map<std::pair<int, int>, Tensor> act, grad;  // (producing stage, micro-batch)
    std::map<std::pair<int, int>, std::vector<Tensor>> stash;
    std::vector<size_t> next(sch.num_devices, 0);
    bool progress = true;
    while (progress) {
      progress = false;
      for (int d = 0; d < sch.num_devices; ++d) {
        if (next[d] == sch.device_ops[d].size()) continue;
        const planner::Op& op = sch.device_ops[d][next[d]];
        const int s = op.stage, j = op.micro_batch;
        LayerRange& r = *stage[s];
        if (op.kind == OpKind::F) {
          if (s > 0 && !act.count({s - 1, j})) continue;
          std::vector<Tensor> in;
          for (const auto& b : r.inputs()) {
            std::vector<int64_t> shape{mbs};
            shape.insert(shape.end(), b.sample_shape.begin(), b.sample_shape.end());
            if (b.name == kDataInput || b.name == kTargetInput) {
              Tensor t(shape);
              data(it, j * mbs, mbs, b.name == kDataInput ? &t : nullptr, b.name == kTargetInput ? &t : nullptr);
              in.push_back(std::move(t));
            } else {
              in.push_back(std::move(act.at({s - 1, j})));
            }
          }
          std::vector<Tensor> w;
          for (Tensor* p : r.parameters()) w.push_back(p->clone());
          stash[{s, j}] = std::move(w);
          auto out = r.forward(j, std::move(in));
          if (s + 1 < S) act[{s, j}] = std::move(out.at(0));
        } else {
          REQUIRE(op.kind == OpKind::BW);
          if (s + 1 < S && !grad.count({s + 1, j})) continue;
          std::vector<Tensor> g;
          if (s + 1 < S) {
            g.push_back(std::move(grad.at({s + 1, j})));
          } else {
            g.emplace_back(std::vector<int64_t>{1});
            g.back().fill(1.0f);
          }
          auto params = r.parameters();
          auto& w = stash.at({s, j});
          for (size_t i = 0; i < w.size(); ++i) std::swap(*params[i], w[i]);
          auto gin = r.backward(j, std::move(g));
          for (size_t i = 0; i < w.size(); ++i) std::swap(*params[i], w[i]);
          stash.erase({s, j});
          opt[s]->step();
          r.zero_grad();
          for (size_t k = 0; k < r.inputs().size(); ++k)
            if (r.inputs()[k].name != kDataInput && r.inputs()[k].name != kTargetInput)
              grad[{s, j}] = std::move(gin[k]);
        }
        ++next[d];
        progress = true;
      }
    }
    for (int d = 0; d < sch.num_devices; ++d) REQUIRE(next[d] == sch.device_ops[d].size());
  }
}
}  // namespace

TEST_CASE("runtime pipedream-async: weight stashing matches the plain reference") {
  for (int S : {2, 3}) {
    CAPTURE(S);
    const int M = 4;
    const planner::Schedule sch = planner::make_schedule(planner::ScheduleKind::pipedream_async, S, M);
    Network ref(tiny_model("mlp", kAsyncBatch), 7);
    reference_pipedream(ref, sch, 2, kAsyncBatch / M);

    Network net(tiny_model("mlp", kAsyncBatch), 7);
    ComputeConfig cc{kAsyncBatch, kAsyncBatch / M, true, true};
    LayerStageCompute comp(net, even_ranges(net.size(), S, false), cc, tiny_data(net), plain_sgd());
    RuntimeOptions o;
    o.timeout = std::chrono::milliseconds(60000);
    o.threads_per_worker = 1;
    PipelineRuntime rt(sch, comp, o);
    rt.run_iteration();
    rt.run_iteration();
    CHECK(max_relative_difference(net.parameters(), ref.parameters()) < 1e-6);
    for (int s = 0; s < S; ++s) CHECK(comp.weight_version(s) == 2 * M);

    // Without stashing the backward would use newer weights: the result differs.
    Network plain(tiny_model("mlp", kAsyncBatch), 7);
    ComputeConfig nostash{kAsyncBatch, kAsyncBatch / M, true, false};
    LayerStageCompute comp2(plain, even_ranges(plain.size(), S, false), nostash, tiny_data(plain), plain_sgd());
    PipelineRuntime rt2(sch, comp2, o);
    rt2.run_iteration();
    rt2.run_iteration();
    CHECK(max_relative_difference(plain.parameters(), ref.parameters()) > 1e-4);
  }
}

TEST_CASE("runtime pipedream-async: vertical sync runs and keeps versions bounded") {
  const int S = 3, M = 6;
  Network net(tiny_model("mlp", kAsyncBatch * 3 / 4 * 2), 7);
  ComputeConfig cc{12, 2, true, true};
  LayerStageCompute comp(net, even_ranges(net.size(), S, false), cc, tiny_data(net), plain_sgd());
  RuntimeOptions o;
  o.vertical_sync = true;
  o.threads_per_worker = 1;
  o.timeout = std::chrono::milliseconds(60000);
  PipelineRuntime rt(planner::make_schedule(planner::ScheduleKind::pipedream_async, S, M), comp, o);
  for (int i = 0; i < 3; ++i) rt.run_iteration();
  for (int s = 0; s < S; ++s) {
    CHECK(comp.weight_version(s) == 3 * M);
    // After the drain only weights, gradients, momentum and at most a few old versions remain.
    CHECK(comp.memory_bytes(s) <= comp.weights_optimizer_bytes(s) * 3);
  }
}
