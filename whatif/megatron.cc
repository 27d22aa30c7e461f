#include "whatif/megatron.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/defaults.h"
#include "models/gemm_efficiency.h"
#include "models/profile_points.h"
#include "models/transformer_cost.h"
#include "models/zoo.h"
#include "planner/schedule_gen.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "whatif/runner.h"

namespace pw::whatif {
namespace {

constexpr double kAdamBytesPerParameter = 16;  // 2 weights + 2 gradients + 12 optimizer state
constexpr double kAdamStateBytes = 12;

int64_t to_ns(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

// Ring all-reduce of `bytes` over n devices on `link`, in seconds.
double ring_allreduce_s(int n, double bytes, const models::LinkSpec& link) {
  if (n <= 1) return 0;
  return 2.0 * (n - 1) / n * bytes / models::achieved_bandwidth(link) + 2.0 * (n - 1) * link.latency_ns * 1e-9;
}

// The link a group of `count` devices `stride` apart crosses (starting at a node boundary).
const models::LinkSpec& link_of_group(const Machine& m, int64_t stride, int count) {
  return stride * count <= m.devices_per_node ? m.intra : m.inter;
}

// Per-device seconds of one transformer layer and of the layers around the blocks for one
// micro-batch, split into forward (F), input gradient (B) and weight gradient (W); compute only
// (the tensor-parallel all-reduces are added by the caller).
using PassTimes = models::PassSeconds;

// The constant-efficiency model: every product at peak x efficiency, B and W each as much as F.
PassTimes constant_layer(double flops_fwd, double rate) {
  return {flops_fwd / rate, flops_fwd / rate, flops_fwd / rate};
}

// The device's GEMM curve on Megatron's block with 4h MLP, t-way split (models/transformer_cost.h:
// the products and the memory-bound kernels `kernels` names; bf16, 2 bytes an element).
PassTimes curve_layer(const Machine& m, double b, double s, double h, double a, double t, bool sp) {
  models::BlockShape shape;
  shape.batch = b;
  shape.seq = s;
  shape.d_model = h;
  shape.heads = a;
  shape.ffn = 4 * h;
  shape.tp = t;
  shape.sequence_parallel = sp;
  return models::block_seconds(m.device, shape, m.kernels, 2);
}

// The layers around the blocks, priced as `plan --model gpt` prices them: the zoo's GPT
// (models/zoo.h) through models::default_analytic_profile (micro-batch 1 scaled linearly to b,
// or the point at b where the device's GEMM-size efficiency is on), with the vocabulary split
// over t (Megatron-LM's vocabulary-parallel embedding, LM head and cross-entropy; it pads the
// vocabulary to a multiple of t, hence the rounding up).
struct EndTimes {
  PassTimes embedding, final_norm, lm_head, loss;
};

EndTimes end_times(const GptShape& g, int64_t b, int t, const Machine& m) {
  models::ZooOptions zo;
  zo.layers = 1;
  zo.d_model = g.hidden;
  zo.heads = g.heads;
  zo.seq = g.seq;
  zo.vocab = (g.vocab + t - 1) / t;
  zo.batch = b;
  const models::Model gpt = models::build_zoo_model("gpt", zo);
  models::Profile p =
      models::default_analytic_profile(gpt, m.device, b, m.bf16, models::kDefaultOptimizer, m.efficiency);
  if (!p.points.empty()) p = models::profile_at(p, b, 1).profile;
  const double scale = static_cast<double>(b) / static_cast<double>(p.micro_batch) * 1e-9;
  auto layer = [&](const char* name) -> PassTimes {
    const models::LayerProfile& l = p.layers[p.index_of(name)];
    return {l.forward_ns * scale, l.backward_input_ns * scale, l.backward_weight_ns * scale};
  };
  return {layer("embedding"), layer("final_norm"), layer("lm_head"), layer("loss")};
}

}  // namespace

int64_t megatron_parameters(const GptShape& g) {
  const int64_t l = g.layers, h = g.hidden;
  return 12 * l * h * h + 13 * l * h + (g.vocab + g.seq) * h;
}

double megatron_flops(const GptShape& g, int64_t batch, bool recompute) {
  const double B = batch, s = g.seq, l = g.layers, h = g.hidden, V = g.vocab;
  if (recompute) return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

Evaluation evaluate_layout(const GptShape& g, int64_t batch, const Machine& m, const Layout& lay) {
  Evaluation e;
  const int t = lay.tp, p = lay.pp, d = lay.dp, v = lay.chunks;
  const int64_t b = lay.micro_batch;
  auto fail = [&](std::string why) {
    e.reason = std::move(why);
    return e;
  };
  if (t < 1 || p < 1 || d < 1 || v < 1 || b < 1) return fail("t, p, d, v and b must be >= 1");
  if (static_cast<int64_t>(t) * p * d != m.devices) return fail("t x p x d != devices");
  if (m.devices_per_node % t != 0) return fail("t does not divide the devices of a node");
  if (g.heads % t != 0 || g.hidden % t != 0) return fail("t does not divide heads and hidden");
  const int S = p * v;  // virtual stages
  if (!lay.stage_layers.empty()) {
    if (static_cast<int>(lay.stage_layers.size()) != S) return fail("stage_layers must give p x v block counts");
    int64_t sum = 0;
    for (int n : lay.stage_layers) {
      if (n < 0) return fail("stage_layers must be >= 0");
      sum += n;
    }
    if (sum != g.layers) return fail("stage_layers must add up to the layers");
  } else if (g.layers % (static_cast<int64_t>(p) * v) != 0) {
    return fail("p x v does not divide the layers");
  }
  // The stages of the layers around the blocks (Layout::embedding_stage ...), checked against
  // the blocks' cut: the embedding before the first block, the rest after the last, in order.
  const int emb_st = lay.embedding_stage < 0 ? 0 : lay.embedding_stage;
  const int norm_st = lay.final_norm_stage < 0 ? S - 1 : lay.final_norm_stage;
  const int head_st = lay.lm_head_stage < 0 ? S - 1 : lay.lm_head_stage;
  const int loss_st = lay.loss_stage < 0 ? S - 1 : lay.loss_stage;
  if (emb_st >= S || norm_st >= S || head_st >= S || loss_st >= S)
    return fail("embedding/final_norm/lm_head/loss stages must be < p x v");
  if (!(norm_st <= head_st && head_st <= loss_st)) return fail("final_norm, lm_head and loss stages must be in order");
  if (!lay.stage_layers.empty()) {
    int first_blocks = S, last_blocks = -1;
    for (int st = 0; st < S; ++st)
      if (lay.stage_layers[st] > 0) {
        first_blocks = std::min(first_blocks, st);
        last_blocks = st;
      }
    if (emb_st > first_blocks || norm_st < last_blocks)
      return fail("the embedding must come before the blocks' stages and the final_norm after them");
  } else if (emb_st != 0 || norm_st != S - 1) {
    return fail("Megatron's equal cut puts the embedding on the first stage and the final norm on the last");
  }
  if (batch % (static_cast<int64_t>(d) * b) != 0) return fail("d x b does not divide the batch");
  const int64_t mb = batch / (d * b);  // micro-batches per pipeline
  if (v > 1 && (p < 2 || mb % p != 0)) return fail("interleaving needs p > 1 and micro-batches % p == 0");
  if (!(m.efficiency >= 0 && m.efficiency <= 1))
    return fail("efficiency must be 0 (the device's GEMM curve) or in (0, 1]");

  const double s = g.seq, h = g.hidden, a = g.heads, V = g.vocab;
  const bool curve = m.efficiency == 0 && models::has_gemm_curve(m.device, m.bf16);
  const double eff = m.efficiency > 0 ? m.efficiency : models::kConstantEfficiency;
  const double rate = (m.bf16 ? m.device.peak_bf16_flops : m.device.peak_fp32_flops) * eff;
  // Transformer blocks per virtual stage: Megatron's equal cut unless the layout gives one.
  std::vector<int64_t> blocks(S, g.layers / S);
  if (!lay.stage_layers.empty()) blocks.assign(lay.stage_layers.begin(), lay.stage_layers.end());
  const PassTimes layer = curve ? curve_layer(m, b, s, h, a, t, lay.sequence_parallel)
                                : constant_layer(24 * b * s * h * h * (1 + s / (6 * h)) / t, rate);
  const double tp_bytes = b * s * h * 2;
  const double tp_ar = ring_allreduce_s(t, tp_bytes, m.intra);
  const EndTimes ends = end_times(g, b, t, m);
  // Activations per layer and micro-batch (bytes), and what full recomputation keeps.
  const double act_layer = lay.sequence_parallel ? s * b * h * (34.0 / t + 5 * a * s / (h * t))
                                                 : s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t));
  const double act_input = lay.sequence_parallel ? 2 * s * b * h / t : 2 * s * b * h;
  const double layer_params = (12 * h * h + 13 * h) / t;
  const double optimizer_bytes_per_param =
      lay.zero1 ? kAdamBytesPerParameter - kAdamStateBytes + kAdamStateBytes / d : kAdamBytesPerParameter;

  sim::StageCosts c;
  c.samples_per_micro_batch = b;
  const models::LinkSpec& dp_link = link_of_group(m, t, d);
  auto add = [](double& f, double& bi, double& w, const PassTimes& x) {
    f += x.f;
    bi += x.b;
    w += x.w;
  };
  for (int st = 0; st < S; ++st) {
    const int64_t per_stage = blocks[st];
    double f = per_stage * (layer.f + 2 * tp_ar), bi = per_stage * (layer.b + 2 * tp_ar), w = per_stage * layer.w;
    double params = per_stage * layer_params;
    if (st == emb_st) {
      params += (V * h) / t + s * h;
      add(f, bi, w, ends.embedding);
    }
    if (st == norm_st) add(f, bi, w, ends.final_norm);
    if (st == head_st) {
      params += (V * h) / t;  // tied output embedding (a copy on the LM head's stage)
      add(f, bi, w, ends.lm_head);
    }
    if (st == loss_st) add(f, bi, w, ends.loss);
    c.forward_ns.push_back(to_ns(f));
    c.backward_input_ns.push_back(to_ns(bi));
    c.backward_weight_ns.push_back(to_ns(w));
    c.allreduce_ns.push_back(to_ns(ring_allreduce_s(d, params * 2, dp_link)));
    // Across the cuts: the hidden states, or the logits between the LM head and the loss
    // (relayed by any stage between them); activations to stage st + 1, gradients to st - 1.
    const double logits_bytes = b * s * std::ceil(V / t) * 2;
    const double received = st > head_st && st <= loss_st ? logits_bytes : tp_bytes / t;
    const double sent = st >= head_st && st < loss_st ? logits_bytes : tp_bytes / t;
    c.activation_bytes.push_back(static_cast<int64_t>(sent));
    c.gradient_bytes.push_back(static_cast<int64_t>(received));
    c.parameter_bytes.push_back(static_cast<int64_t>(params * 2));
    c.weights_optimizer_bytes.push_back(static_cast<int64_t>(params * optimizer_bytes_per_param));
    const double logits_act = st == loss_st ? 4 * b * s * V / t : 0;  // fp32 logits kept for the loss
    if (lay.recompute) {
      c.input_bytes_per_micro_batch.push_back(static_cast<int64_t>(per_stage * act_input + logits_act));
      c.stash_bytes_per_micro_batch.push_back(static_cast<int64_t>(act_layer));  // one layer re-forwarded at a time
    } else {
      c.input_bytes_per_micro_batch.push_back(static_cast<int64_t>(received));
      c.stash_bytes_per_micro_batch.push_back(static_cast<int64_t>(per_stage * act_layer + logits_act));
    }
    c.recompute.push_back(lay.recompute ? 1 : 0);
  }
  // Optimizer step: reads and writes the device's persistent state once at memory bandwidth.
  for (int dev = 0; dev < p; ++dev) {
    double bytes = 0;
    for (int st = dev; st < S; st += p) bytes += c.weights_optimizer_bytes[st];
    c.step_ns.push_back(to_ns(2 * bytes / models::achieved_memory_bandwidth(m.device)));
  }

  planner::Schedule sched = planner::make_schedule(
      v > 1 ? planner::ScheduleKind::interleaved_1f1b : planner::ScheduleKind::one_f_one_b, p, static_cast<int>(mb), v);
  // The data-parallel all-reduce of each stage before the device's step (not overlapped, as
  // in Megatron-LM of SC'21).
  for (int dev = 0; dev < p; ++dev) {
    auto& ops = sched.device_ops[dev];
    const bool has_step = !ops.empty() && ops.back().kind == planner::OpKind::step;
    for (int st = dev; st < S; st += p)
      if (c.allreduce_ns[st] > 0)
        ops.insert(has_step ? ops.end() - 1 : ops.end(), planner::Op{planner::OpKind::allreduce, st, -1, -1, 0});
  }
  // Pipeline device k = cluster device k * t * d: nodes of devices_per_node, then the rest.
  std::vector<models::Level> levels{
      {"node", m.devices_per_node, models::achieved_bandwidth(m.intra), m.intra.latency_ns}};
  if (m.devices > m.devices_per_node)
    levels.push_back(
        {"cluster", m.devices / m.devices_per_node, models::achieved_bandwidth(m.inter), m.inter.latency_ns});
  else levels[0].count = m.devices;
  models::Cluster cluster("3d", m.device, levels);
  std::vector<int> device_of;
  for (int k = 0; k < p; ++k) device_of.push_back(k * t * d);
  sim::Network net = sim::Network::from_cluster(cluster, device_of);
  sim::SimOptions so;
  so.iterations = 1;
  so.validate = false;
  sim::Report r = sim::simulate(sched, c, net, so).report;

  e.iteration_s = r.iteration_ns * 1e-9;
  e.samples_per_s = batch / e.iteration_s;
  const double N = m.devices;
  e.tflops_per_device = megatron_flops(g, batch, lay.recompute) / e.iteration_s / N / 1e12;
  const double peak = m.bf16 ? m.device.peak_bf16_flops : m.device.peak_fp32_flops;
  e.mfu = megatron_flops(g, batch, false) / e.iteration_s / N / peak;
  for (const auto& dr : r.devices) e.peak_memory_bytes = std::max(e.peak_memory_bytes, dr.peak_memory_bytes);
  for (int64_t wo : c.weights_optimizer_bytes) e.weights_optimizer_bytes = std::max(e.weights_optimizer_bytes, wo);
  // Time split on device 0 (the pipeline's first device): the TP and DP all-reduces and the
  // pipeline transfers from the layout's formulas; bubble is the simulated iteration less the
  // device's simulated busy time (never negative); compute is the rest of its busy time
  // (forward, backward, re-forward and the optimizer step), so the parts add up to the iteration.
  double per_mb_layers = 0;  // blocks device 0 runs per iteration
  for (int st = 0; st < S; st += p) per_mb_layers += static_cast<double>(blocks[st]) * mb;
  e.split.tp = per_mb_layers * tp_ar * (lay.recompute ? 6 : 4);
  double dp = 0;
  for (int st = 0; st < S; st += p) dp += c.allreduce_ns[st] * 1e-9;
  e.split.dp = dp;
  e.split.pp = p > 1 ? 2.0 * v * mb * net.cost(0, 1, c.activation_bytes[0]).total() * 1e-9 : 0;
  const int64_t busy0 = r.devices.empty() ? 0 : r.devices[0].busy_ns;
  e.split.bubble = static_cast<double>(r.iteration_ns - busy0) * 1e-9;
  e.split.compute = static_cast<double>(busy0) * 1e-9 - e.split.tp - e.split.dp;
  if (e.peak_memory_bytes > m.device.memory_bytes) {
    e.reason = "needs " + std::to_string(e.peak_memory_bytes) + " bytes per device, the device has " +
               std::to_string(m.device.memory_bytes);
    return e;
  }
  e.feasible = true;
  return e;
}

std::vector<Layout> candidate_layouts(const GptShape& g, int64_t batch, const Machine& m, const SearchAxes& axes) {
  auto allowed = [](const std::vector<int>& list, int x) {
    return list.empty() || std::find(list.begin(), list.end(), x) != list.end();
  };
  const std::vector<int> bs = axes.micro_batch.empty() ? std::vector<int>{1, 2, 4, 8} : axes.micro_batch;
  const std::vector<int> vs = axes.chunks.empty() ? std::vector<int>{1, 2, 4} : axes.chunks;
  std::vector<Layout> out;
  for (int t = 1; t <= m.devices_per_node && t <= m.devices; ++t) {
    if (m.devices_per_node % t || m.devices % t || g.heads % t || g.hidden % t || !allowed(axes.tp, t)) continue;
    for (int p = 1; p <= m.devices / t; ++p) {
      const bool cut = !axes.stage_layers.empty();  // a given cut replaces p | layers
      if ((m.devices / t) % p || (!cut && g.layers % p) || !allowed(axes.pp, p)) continue;
      const int d = m.devices / t / p;
      if (!allowed(axes.dp, d) || batch % d) continue;
      for (int b : bs) {
        if ((batch / d) % b) continue;
        const int64_t mb = batch / d / b;
        for (int v : vs) {
          if (v > 1 && (p < 2 || mb % p || (!cut && g.layers % (static_cast<int64_t>(p) * v)))) continue;
          if (cut && static_cast<int>(axes.stage_layers.size()) != p * v) continue;
          for (bool rc : axes.recompute)
            for (bool sp : axes.sequence_parallel) {
              if (sp && t == 1) continue;
              for (bool z : axes.zero1) {
                if (z && d == 1) continue;
                out.push_back(Layout{t, p, d, b, v, rc, sp, z, axes.stage_layers});
              }
            }
        }
      }
    }
  }
  return out;
}

SearchResult search_layouts(const GptShape& g, int64_t batch, const Machine& m, const SearchAxes& axes, int threads,
                            ProgressMode progress) {
  SearchResult res;
  res.layouts = candidate_layouts(g, batch, m, axes);
  res.evaluations.resize(res.layouts.size());
  ProgressBar bar(stderr, res.layouts.size(), "best", progress);
  parallel_for(
      res.layouts.size(), threads, [&](size_t k) { res.evaluations[k] = evaluate_layout(g, batch, m, res.layouts[k]); },
      &bar);
  bar.finish();
  std::vector<int> feasible;
  for (size_t k = 0; k < res.layouts.size(); ++k)
    if (res.evaluations[k].feasible) feasible.push_back(static_cast<int>(k));
  std::stable_sort(feasible.begin(), feasible.end(), [&](int x, int y) {
    const Evaluation &a = res.evaluations[x], &b = res.evaluations[y];
    return a.iteration_s != b.iteration_s ? a.iteration_s < b.iteration_s : a.peak_memory_bytes < b.peak_memory_bytes;
  });
  if (!feasible.empty()) res.best = feasible.front();
  int64_t lowest = std::numeric_limits<int64_t>::max();
  for (int k : feasible)
    if (res.evaluations[k].peak_memory_bytes < lowest) {
      lowest = res.evaluations[k].peak_memory_bytes;
      res.frontier.push_back(k);
    }
  return res;
}

}  // namespace pw::whatif
