// "One question, one answer": the same model on the same devices with the same layout
// (stages, micro-batches, schedule, recompute) gets the same iteration time from `plan` (its
// simulated prediction), `simulate --plan` of that plan, a `whatif throughput` cell and a
// `whatif best` point, each computed with its command's default cost settings
// (models/defaults.h). Library calls, as each command makes them. whatif best is asked for
// the plan's layout: t 1, p = the plan's stages, d 1, the plan's micro-batch and recompute and
// the plan's cut (Layout::stage_layers for the blocks, Layout::embedding_stage .. loss_stage for
// the layers around them: the planner may give the LM head and the loss a stage each).
// Measured on 2026-11-28: plan, simulate --plan and the throughput cell identical in all 40
// cases; whatif best within 0.50% of plan in all 10 cases it can express (+0.14% for 48 x 1600
// on 8, +0.50% at most, 12 x 768 on 16). The rest is whatif best's optimizer step (each device
// reads and writes its weights and Adam state once per iteration; the planner's analytic
// profile charges no step): in the cases checked the gap is device 0's step time. Before whatif best priced the
// embedding, final norm, LM head and loss by the cost model and placed them as the plan does,
// it was within 7.2% (12 x 768 on 4: no loss, no embedding, the logits always on the last stage).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "models/defaults.h"
#include "models/device.h"
#include "models/error.h"
#include "models/zoo.h"
#include "planner/planner.h"
#include "sim/plan_prediction.h"
#include "whatif/megatron.h"
#include "whatif/throughput.h"

namespace {

struct OneAnswerSize {
  int64_t layers, d_model, heads;
};

struct OneAnswerFigures {
  bool feasible = false;
  int stages = 0;
  bool recompute_all = false, recompute_none = false;
  double plan_s = 0, simulate_s = 0, throughput_s = 0, best_s = -1;  // best_s < 0: no such layout
};

constexpr int64_t kOneAnswerSeq = 1024, kOneAnswerVocab = 50257;

// `pipewright plan --model gpt --layers L --d-model H --heads A --device a100-80g --devices N
// --batch B --micro-batches M --schedule S` (every cost flag at its default), then
// `simulate --plan`, `whatif throughput -K N -M M --schedules S` and `whatif best --tp 1 --pp
// <the plan's stages> --dp 1 --micro-batch B/M --chunks v --recompute <the plan's>` on the
// devices the plan uses.
OneAnswerFigures one_answer(const OneAnswerSize& z, int devices, int64_t batch, int micro_batches,
                            const std::string& schedule) {
  using namespace pw;
  OneAnswerFigures f;
  models::ZooOptions zo;
  zo.layers = z.layers;
  zo.d_model = z.d_model;
  zo.heads = z.heads;
  zo.seq = kOneAnswerSeq;
  zo.vocab = kOneAnswerVocab;
  zo.batch = batch;
  const models::Model model = models::build_zoo_model("gpt", zo);
  const models::DeviceSpec& dev = models::find_device(models::kDefaultDevice);
  const bool bf16 = models::default_bf16(dev);
  planner::PlanRequest req;
  req.batch = batch;
  req.micro_batches = micro_batches;
  req.schedule = planner::parse_schedule_request(schedule, "schedule");
  req.optimizer = models::priced_optimizer(req.optimizer, bf16);
  const models::Profile profile =
      models::default_analytic_profile(model, dev, batch, bf16, req.optimizer, models::kDefaultEfficiency);
  const models::Cluster cluster = models::make_node_cluster(dev, devices, models::kDefaultDevicesPerNode,
                                                            models::find_link(models::kDefaultIntraNode),
                                                            models::find_link(models::kDefaultInterconnect));
  planner::PlanOutcome out;
  try {
    out = sim::plan_with_prediction(profile, cluster, req);
  } catch (const InputError&) {  // interleaved-1f1b whose micro-batches are not a multiple of the devices
    return f;
  }
  if (!out.feasible) return f;
  f.feasible = true;
  const planner::Plan& plan = out.plan;
  f.plan_s = plan.predicted.iteration_time_s;
  f.simulate_s = static_cast<double>(sim::simulate_plan(plan, profile, &cluster).report.iteration_ns) * 1e-9;

  whatif::WhatifConfig c;  // every cost setting at its default
  c.layers = z.layers;
  c.d_model = z.d_model;
  c.heads = z.heads;
  c.seq = kOneAnswerSeq;
  c.vocab = kOneAnswerVocab;
  c.batch = batch;
  whatif::ThroughputRequest tr;
  tr.stages = {devices};
  tr.micro_batches = {micro_batches};
  tr.schedules = {schedule};
  tr.threads = 1;
  const std::vector<whatif::ThroughputCell> cells = whatif::throughput_grid(c, tr);
  REQUIRE(cells.size() == 1);
  REQUIRE(cells[0].feasible);
  f.throughput_s = cells[0].iteration_s;

  const int chunks = schedule == "interleaved-1f1b" ? plan.chunks : 1;
  f.stages = plan.num_stages() / chunks;
  int recomputed = 0;
  for (const planner::StagePlan& s : plan.stages) recomputed += s.recompute ? 1 : 0;
  f.recompute_all = recomputed == plan.num_stages();
  f.recompute_none = recomputed == 0;
  // whatif best models Megatron-LM: one recompute setting for every stage, 1F1B or interleaved.
  // Its machine is the plan's devices: one node, or whole nodes.
  const bool whole_nodes = f.stages <= models::kDefaultDevicesPerNode || f.stages % models::kDefaultDevicesPerNode == 0;
  if ((f.recompute_all || f.recompute_none) && (schedule == "1f1b" || schedule == "interleaved-1f1b") && whole_nodes) {
    whatif::Machine m;
    m.device = dev;
    m.intra = models::find_link(models::kDefaultIntraNode);
    m.inter = models::find_link(models::kDefaultInterconnect);
    m.devices = f.stages;
    m.devices_per_node = std::min(models::kDefaultDevicesPerNode, f.stages);
    m.efficiency = models::kDefaultEfficiency;
    m.bf16 = bf16;
    whatif::Layout lay;
    lay.pp = f.stages;
    lay.micro_batch = static_cast<int>(batch / micro_batches);
    lay.chunks = chunks;
    lay.recompute = f.recompute_all && recomputed > 0;
    // The planner's cut (Megatron's own is equal blocks per stage, the logits on the last).
    for (const planner::StagePlan& st : plan.stages) {
      const int k = static_cast<int>(lay.stage_layers.size());
      int blocks = 0;
      for (int l = st.first_layer; l < st.end_layer; ++l) {
        const std::string& name = model.layers()[l].name;
        blocks += model.layers()[l].kind == models::LayerKind::transformer_block ? 1 : 0;
        if (name == "embedding") lay.embedding_stage = k;
        if (name == "final_norm") lay.final_norm_stage = k;
        if (name == "lm_head") lay.lm_head_stage = k;
        if (name == "loss") lay.loss_stage = k;
      }
      lay.stage_layers.push_back(blocks);
    }
    const whatif::Evaluation e = whatif::evaluate_layout(
        whatif::GptShape{z.layers, z.d_model, z.heads, kOneAnswerSeq, kOneAnswerVocab}, batch, m, lay);
    if (e.feasible) f.best_s = e.iteration_s;
  }
  return f;
}

double one_answer_gap(double a, double b) { return std::abs(a / b - 1); }

}  // namespace

TEST_CASE("one answer: plan, simulate --plan, whatif throughput and whatif best agree within 1% over a GPT grid") {
  const OneAnswerSize sizes[] = {{12, 768, 12}, {24, 1024, 16}, {48, 1600, 25}};
  const int device_counts[] = {4, 8, 16, 64};
  const std::string schedules[] = {"gpipe", "1f1b", "zb-h1", "interleaved-1f1b"};
  double worst_sim = 0, worst_throughput = 0, worst_best = 0;
  int cases = 0, best_cases = 0;
  for (const OneAnswerSize& z : sizes)
    for (int n : device_counts)
      for (const std::string& s : schedules) {
        const int64_t batch = 128;
        const int m = 2 * std::min(n, 16);
        CAPTURE(z.layers);
        CAPTURE(n);
        CAPTURE(s);
        const OneAnswerFigures f = one_answer(z, n, batch, m, s);
        if (!f.feasible) continue;
        ++cases;
        MESSAGE("gpt ", z.layers, "x", z.d_model, " on ", n, ", ", s, ": ", f.stages, " stages, plan ", f.plan_s,
                " s, simulate ", f.simulate_s, ", throughput ", f.throughput_s, ", best ", f.best_s);
        CHECK(one_answer_gap(f.simulate_s, f.plan_s) <= 0.01);
        CHECK(one_answer_gap(f.throughput_s, f.plan_s) <= 0.01);
        worst_sim = std::max(worst_sim, one_answer_gap(f.simulate_s, f.plan_s));
        worst_throughput = std::max(worst_throughput, one_answer_gap(f.throughput_s, f.plan_s));
        if (f.best_s > 0) {
          ++best_cases;
          // whatif best prices the blocks as the planner's cost model does (the GEMM curve and
          // the block's memory-bound kernels, models/transformer_cost.h) and the embedding,
          // final norm, LM head and loss by that model itself; what remains is its optimizer
          // step (the analytic profile has none).
          CHECK(one_answer_gap(f.best_s, f.plan_s) <= 0.01);
          worst_best = std::max(worst_best, one_answer_gap(f.best_s, f.plan_s));
        }
      }
  MESSAGE(cases, " cases (", best_cases, " with a whatif best layout); largest gaps to plan: simulate ", worst_sim,
          ", throughput ", worst_throughput, ", best ", worst_best);
  CHECK(cases >= 36);
  CHECK(best_cases >= 10);
}
