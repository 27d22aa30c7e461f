#include "models/cost.h"

#include <algorithm>
#include <cmath>

#include "models/defaults.h"
#include "models/device_file.h"
#include "models/error.h"
#include "models/gemm_efficiency.h"
#include "models/limits.h"
#include "models/optimizer_memory.h"
#include "models/transformer_cost.h"

namespace pw::models {

namespace {

std::string describe(const LayerSpec& l) { return "layer \"" + l.name + "\" (" + std::string(to_string(l.kind)) + ")"; }

// A required attribute >= 1.
int64_t pos(const LayerSpec& l, const char* key) {
  int64_t v = l.attr(key);
  if (v < 1) throw InputError(describe(l) + ": attribute \"" + key + "\" must be >= 1, got " + std::to_string(v));
  return v;
}

bool flag(const LayerSpec& l, const char* key, bool fallback) {
  int64_t v = l.attr_or(key, fallback ? 1 : 0);
  if (v != 0 && v != 1)
    throw InputError(describe(l) + ": attribute \"" + key + "\" must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

void expect_shape(const LayerSpec& l, const std::vector<int64_t>& expected) {
  if (l.output_shape != expected)
    throw InputError(describe(l) + ": output_shape " + shape_str(l.output_shape) +
                     " does not match its attrs (expected " + shape_str(expected) + ")");
}

int64_t window_out(const LayerSpec& l, int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  if (pad < 0 || pad >= kernel)
    throw InputError(describe(l) + ": attribute \"pad\" must be in [0, kernel), got " + std::to_string(pad));
  int64_t out = (in + 2 * pad - kernel) / stride + 1;
  if (in + 2 * pad < kernel)
    throw InputError(describe(l) + ": kernel " + std::to_string(kernel) + " is larger than the padded input " +
                     std::to_string(in + 2 * pad));
  return out;
}

// Everything per micro-batch, in elements or FLOPs, before conversion to bytes.
struct Work {
  double fwd = 0, bwd_in = 0, bwd_w = 0;
  double in_elems = 0;  // elements read by forward (all inputs)
  double out_elems = 0;
  double stash_bytes = 0;
  double workspace_bytes = 0;
  double internal_elems = 0;  // intermediates a fused layer writes in forward (beyond its output)
  double pending_elems = 0;   // what B keeps for W beyond the output gradient (attention, blocks)
  bool input_grad = true;     // backward writes a gradient for its inputs
  double params = 0;
};

// Parameters of one layer as a double (for overflow checks) and its attrs validated.
double params_of(const LayerSpec& l) {
  switch (l.kind) {
    case LayerKind::embedding:
      return double(pos(l, "vocab")) * pos(l, "d_model") + double(pos(l, "seq")) * pos(l, "d_model");
    case LayerKind::linear: return double(pos(l, "in")) * pos(l, "out") + (flag(l, "bias", true) ? pos(l, "out") : 0);
    case LayerKind::layer_norm: return 2.0 * pos(l, "dim");
    case LayerKind::batch_norm: return 2.0 * pos(l, "c");
    case LayerKind::attention: {
      double h = pos(l, "d_model");
      return 4 * h * h + 4 * h;
    }
    case LayerKind::transformer_block: {
      double h = pos(l, "d_model"), f = pos(l, "ffn");
      return 4 * h * h + 2 * h * f + f + 9 * h;
    }
    case LayerKind::lm_head: return flag(l, "tied", false) ? 0.0 : double(pos(l, "d_model")) * pos(l, "vocab");
    case LayerKind::conv2d: {
      double out_c = pos(l, "out_c"), k = pos(l, "kernel"), g = double(l.attr_or("groups", 1));
      return out_c * pos(l, "in_c") / g * k * k + (flag(l, "bias", true) ? out_c : 0);
    }
    default: return 0;
  }
}

// Causal self-attention with heads a over [s, h]; `block` adds the pre-norm block's MLP (ffn f).
void attention_work(const LayerSpec& l, double B, bool block, Work& w) {
  const double s = pos(l, "seq"), h = pos(l, "d_model"), a = pos(l, "heads");
  if (pos(l, "d_model") % pos(l, "heads") != 0)
    throw InputError(describe(l) + ": d_model " + std::to_string(pos(l, "d_model")) + " is not divisible by heads " +
                     std::to_string(pos(l, "heads")));
  expect_shape(l, {pos(l, "seq"), pos(l, "d_model")});
  const double f = block ? pos(l, "ffn") : 0;
  const double weight_mm = 2 * B * s * (4 * h * h + 2 * h * f);
  const double score_mm = 4 * B * s * s * h;  // Q K^T and P V
  w.fwd = weight_mm + score_mm;
  w.bwd_in = weight_mm + 2 * score_mm;
  w.bwd_w = weight_mm;
  w.in_elems = B * s * h;
  // x, ln1(x), q, k, v, context, x1, ln2(x1): 8sh (attention alone: x, q, k, v, context: 5sh);
  // the MLP's two [s, f] activations; softmax probabilities a*s^2.
  const double kept = B * ((block ? 8 : 5) * s * h + 2 * s * f + a * s * s);
  w.internal_elems = kept;
  w.workspace_bytes = B * a * s * s;  // scaled to bytes by the caller
  // B's gradients of the internal products' outputs, kept for W: the qkv product's 3sh
  // (attention alone); a block adds its two layer norms' (2sh), the first MLP product's sf and
  // the second's sh.
  w.pending_elems = B * s * (block ? 6 * h + f : 3 * h);
}

Work work_of(const LayerSpec& l, double B, int eb) {
  Work w;
  w.out_elems = B * double(l.output_elements());
  w.in_elems = w.out_elems;
  switch (l.kind) {
    case LayerKind::input:
      w.in_elems = 0;
      w.input_grad = false;
      break;
    case LayerKind::embedding: {
      const double s = pos(l, "seq"), h = pos(l, "d_model");
      pos(l, "vocab");
      expect_shape(l, {pos(l, "seq"), pos(l, "d_model")});
      w.fwd = B * s * h;  // position add
      w.bwd_w = 2 * B * s * h;
      w.in_elems = B * s + 2 * B * s * h;  // ids, token and position rows
      w.stash_bytes = B * s * 4;           // token ids
      w.input_grad = false;
      break;
    }
    case LayerKind::linear: {
      const double in = pos(l, "in"), out = pos(l, "out");
      if (l.output_shape.empty() || l.output_shape.back() != pos(l, "out"))
        throw InputError(describe(l) + ": output_shape " + shape_str(l.output_shape) +
                         " must end in out = " + std::to_string(pos(l, "out")));
      const double rows = w.out_elems / out;
      w.fwd = w.bwd_in = w.bwd_w = 2 * rows * in * out;
      w.in_elems = rows * in;
      w.stash_bytes = w.in_elems * eb;
      break;
    }
    case LayerKind::relu:
      w.fwd = w.bwd_in = w.out_elems;
      w.stash_bytes = w.out_elems;  // 1-byte mask
      break;
    case LayerKind::gelu:
      w.fwd = 8 * w.out_elems;
      w.bwd_in = 12 * w.out_elems;
      w.stash_bytes = w.in_elems * eb;
      break;
    case LayerKind::layer_norm:
    case LayerKind::batch_norm: {
      const bool ln = l.kind == LayerKind::layer_norm;
      const double groups = ln ? w.out_elems / pos(l, "dim") : pos(l, "c");
      if (ln && (l.output_shape.empty() || l.output_shape.back() != pos(l, "dim")))
        throw InputError(describe(l) + ": output_shape must end in dim = " + std::to_string(pos(l, "dim")));
      if (!ln && (l.output_shape.empty() || l.output_shape.front() != pos(l, "c")))
        throw InputError(describe(l) + ": output_shape must start with c = " + std::to_string(pos(l, "c")));
      w.fwd = 8 * w.out_elems;
      w.bwd_in = 12 * w.out_elems;
      w.bwd_w = 4 * w.out_elems;
      w.stash_bytes = w.in_elems * eb + groups * 2 * 4;  // input + mean, rstd (fp32)
      if (!ln) w.pending_elems = 2 * groups * 4.0 / eb;  // per-channel sums for W (fp32)
      break;
    }
    case LayerKind::attention:
    case LayerKind::transformer_block: {
      const bool block = l.kind == LayerKind::transformer_block;
      attention_work(l, B, block, w);
      const double s = pos(l, "seq");
      w.stash_bytes = w.internal_elems * eb + (block ? 4 : 0) * B * s * 4;  // + layer-norm statistics
      w.workspace_bytes *= eb;
      break;
    }
    case LayerKind::residual_add:
      w.fwd = w.out_elems;
      w.in_elems = 2 * w.out_elems;
      break;
    case LayerKind::lm_head: {
      const double s = pos(l, "seq"), h = pos(l, "d_model"), V = pos(l, "vocab");
      flag(l, "tied", false);
      expect_shape(l, {pos(l, "seq"), pos(l, "vocab")});
      w.fwd = w.bwd_in = w.bwd_w = 2 * B * s * h * V;
      w.in_elems = B * s * h;
      w.stash_bytes = w.in_elems * eb;
      break;
    }
    case LayerKind::softmax_xent: {
      const double n = B * double(pos(l, "rows")) * pos(l, "classes");
      w.fwd = 5 * n;
      w.bwd_in = 2 * n;
      w.in_elems = n;
      w.stash_bytes = n * eb + B * pos(l, "rows") * 4;  // probabilities + int32 labels
      break;
    }
    case LayerKind::mse_loss: {
      const double n = B * double(pos(l, "dim"));
      w.fwd = 3 * n;
      w.bwd_in = 2 * n;
      w.in_elems = 2 * n;  // prediction and target
      w.stash_bytes = 2 * n * eb;
      break;
    }
    case LayerKind::conv2d: {
      const int64_t k = pos(l, "kernel"), st = pos(l, "stride"), pad = l.attr("pad");
      const int64_t oh = window_out(l, pos(l, "in_h"), k, st, pad), ow = window_out(l, pos(l, "in_w"), k, st, pad);
      expect_shape(l, {pos(l, "out_c"), oh, ow});
      const int64_t groups = l.attr_or("groups", 1);
      if (groups < 1 || pos(l, "in_c") % groups != 0 || pos(l, "out_c") % groups != 0)
        throw InputError(describe(l) + ": groups " + std::to_string(groups) + " must divide in_c and out_c");
      const double mm = 2 * B * double(pos(l, "out_c")) * oh * ow * pos(l, "in_c") * k * k / double(groups);
      w.fwd = w.bwd_in = w.bwd_w = mm;
      w.in_elems = B * double(pos(l, "in_c")) * pos(l, "in_h") * pos(l, "in_w");
      w.stash_bytes = w.in_elems * eb;
      break;
    }
    case LayerKind::max_pool:
    case LayerKind::avg_pool: {
      const int64_t k = pos(l, "kernel"), st = pos(l, "stride"), pad = l.attr_or("pad", 0);
      const int64_t oh = window_out(l, pos(l, "in_h"), k, st, pad), ow = window_out(l, pos(l, "in_w"), k, st, pad);
      expect_shape(l, {pos(l, "c"), oh, ow});
      w.in_elems = B * double(pos(l, "c")) * pos(l, "in_h") * pos(l, "in_w");
      w.fwd = w.out_elems * double(k) * k;
      w.bwd_in = w.in_elems;
      if (l.kind == LayerKind::max_pool) w.stash_bytes = w.out_elems * 4;  // int32 argmax
      break;
    }
    case LayerKind::concat:
      w.fwd = w.out_elems;  // copies
      w.bwd_in = w.out_elems;
      break;
    case LayerKind::dropout:
      w.fwd = w.bwd_in = w.out_elems;
      w.stash_bytes = w.out_elems * eb;  // the scaled mask
      break;
    case LayerKind::flatten:
      w.in_elems = 0;  // a view: nothing moves
      w.out_elems = 0;
      break;
    case LayerKind::opaque:
      throw InputError(describe(l) + ": has no analytic cost (use a measured or imported profile)");
  }
  w.params = params_of(l);
  return w;
}

// The matrix products of a linear, lm_head or conv2d layer (attrs already validated by
// work_of), forward, input gradient (B) and weight gradient (W); empty for every other kind
// (attention and transformer_block: models/transformer_cost.h).

PassGemms layer_gemms(const LayerSpec& l, double B) {
  PassGemms g;
  switch (l.kind) {
    case LayerKind::linear: {
      const double out = pos(l, "out");
      add_weight_product(g, {B * double(l.output_elements()) / out, out, double(pos(l, "in"))});
      break;
    }
    case LayerKind::lm_head:
      add_weight_product(g, {B * pos(l, "seq"), double(pos(l, "vocab")), double(pos(l, "d_model"))});
      break;
    case LayerKind::conv2d: {  // implicit GEMM: rows = output pixels, one product per group
      const double k = pos(l, "kernel"), groups = double(l.attr_or("groups", 1));
      const double pixels = double(l.output_shape[1]) * double(l.output_shape[2]);
      add_weight_product(g, {B * pixels, pos(l, "out_c") / groups, pos(l, "in_c") / groups * k * k, groups});
      break;
    }
    default: break;
  }
  return g;
}

// The block of an attention or transformer_block layer (attrs validated by work_of).
BlockShape block_shape(const LayerSpec& l, double B) {
  BlockShape b;
  b.batch = B;
  b.seq = pos(l, "seq");
  b.d_model = pos(l, "d_model");
  b.heads = pos(l, "heads");
  b.mlp = l.kind == LayerKind::transformer_block;
  if (b.mlp) b.ffn = pos(l, "ffn");
  return b;
}

int64_t to_bytes(const LayerSpec& l, double bytes) {
  if (!(bytes <= static_cast<double>(limits::kBytes.max)))
    throw InputError(describe(l) + ": " + format_real(bytes) + " bytes, more than the " +
                     format_real(static_cast<double>(limits::kBytes.max)) + " a profile may hold");
  return static_cast<int64_t>(std::llround(bytes));
}

// Seconds of one pass of layer l as whole ns, refused past limits::kDurationNs (a layer far too
// large for the device, or a device file's rates far too low) rather than rounded to whatever
// llround returns past int64.
int64_t pass_ns(const LayerSpec& l, double seconds) {
  if (!(seconds * 1e9 <= static_cast<double>(limits::kDurationNs.max)))
    throw InputError(describe(l) + ": one pass takes " + format_real(seconds) + " s on this device, more than the " +
                     format_real(static_cast<double>(limits::kDurationNs.max) / 1e9) + " s a profile may hold");
  return std::llround(seconds * 1e9);
}

}  // namespace

int64_t layer_parameter_count(const LayerSpec& layer) {
  if (layer.kind == LayerKind::opaque)
    throw InputError(describe(layer) + ": has no analytic cost (use a measured or imported profile)");
  const int64_t n = to_bytes(layer, params_of(layer));
  return layer.shares.empty() ? n : 0;
}

LayerCost layer_cost(const LayerSpec& layer, int64_t micro_batch, int element_bytes) {
  if (micro_batch < 1) throw InputError("micro-batch: expected an integer >= 1, got " + std::to_string(micro_batch));
  PW_CHECK(element_bytes == 2 || element_bytes == 4, "element_bytes must be 2 or 4");
  const double B = static_cast<double>(micro_batch);
  const int eb = element_bytes;
  const Work w = work_of(layer, B, eb);
  LayerCost c;
  c.forward_flops = w.fwd;
  c.backward_input_flops = w.bwd_in;
  c.backward_weight_flops = w.bwd_w;
  const bool token_ids = layer.kind == LayerKind::input && layer.attrs.count("vocab");
  c.output_bytes = to_bytes(layer, w.out_elems * (token_ids ? 4 : eb));
  if (layer.kind == LayerKind::flatten) c.output_bytes = to_bytes(layer, B * double(layer.output_elements()) * eb);
  c.stash_bytes = to_bytes(layer, w.stash_bytes);
  c.parameter_bytes = layer.shares.empty() ? to_bytes(layer, w.params * eb) : 0;
  c.workspace_bytes = to_bytes(layer, w.workspace_bytes);
  if (layer.kind == LayerKind::input) return c;  // data loading: nothing computed, nothing moved
  // A layer with weights of its own keeps its output gradient from B to W (W reads it), and
  // what work_of says beyond it; a layer sharing another's weights (a tied head) keeps nothing.
  if (w.params > 0 && layer.shares.empty())
    c.weight_pending_bytes = to_bytes(layer, (w.out_elems + w.pending_elems) * eb);
  const double weights = w.params * eb;
  const double stash_written =
      layer.kind == LayerKind::attention || layer.kind == LayerKind::transformer_block ? w.internal_elems * eb : 0.0;
  c.forward_mem_bytes = (w.in_elems + w.out_elems) * eb + stash_written + weights;
  c.backward_mem_bytes = w.out_elems * eb + w.stash_bytes + (w.input_grad ? w.in_elems * eb : 0.0) +
                         (w.params > 0 || w.bwd_w > 0 ? 2 * weights : 0.0);
  return c;
}

Profile analytic_memory_profile(const Model& model, int64_t micro_batch, const std::string& optimizer) {
  CostOptions co;
  co.optimizer = optimizer;
  return analytic_profile(model, find_device("cpu-socket"), micro_batch, co);
}

bool has_analytic_costs(const Model& model) {
  for (const LayerSpec& l : model.layers()) {
    try {
      (void)layer_cost(l, 1);
    } catch (const InputError&) { return false; }
  }
  return true;
}

double roofline_seconds(double flops, double bytes, double flops_per_s, double bytes_per_s) {
  PW_CHECK(flops_per_s > 0 && bytes_per_s > 0, "roofline needs positive rates");
  return std::max(flops / flops_per_s, bytes / bytes_per_s);
}

int64_t roofline_ns(double flops, double bytes, double flops_per_s, double bytes_per_s) {
  return std::llround(roofline_seconds(flops, bytes, flops_per_s, bytes_per_s) * 1e9);
}

double gemm_efficiency(double forward_flops, double parameters, double half_rows) {
  if (!(half_rows > 0) || !(parameters > 0) || !(forward_flops > 0)) return 1.0;
  const double rows = forward_flops / (2.0 * parameters);
  return rows / (rows + half_rows);
}

double default_gemm_half_rows(const DeviceSpec& device) { return device.name.rfind("cpu", 0) == 0 ? 16.0 : 0.0; }

Profile analytic_profile_with_points(const Model& model, const DeviceSpec& device, int64_t micro_batch,
                                     const std::vector<int64_t>& sizes, const CostOptions& options) {
  Profile p = analytic_profile(model, device, micro_batch, options);
  for (int64_t b : sizes) {
    if (b == micro_batch) continue;
    const Profile q = analytic_profile(model, device, b, options);
    ProfilePoint pt;
    pt.micro_batch = b;
    pt.threads = 1;
    for (const LayerProfile& l : q.layers)
      pt.layers.push_back({l.forward_ns, l.backward_input_ns, l.backward_weight_ns, 0});
    p.points.push_back(std::move(pt));
  }
  return p;
}

Profile analytic_profile(const Model& model, const DeviceSpec& device, int64_t micro_batch,
                         const CostOptions& options) {
  if (micro_batch < 1) throw InputError("micro-batch: expected an integer >= 1, got " + std::to_string(micro_batch));
  if (!(options.efficiency >= 0 && options.efficiency <= 1))
    throw InputError("efficiency: expected 0 (the device's GEMM curve) or a number in (0, 1], got " +
                     std::to_string(options.efficiency));
  const OptimizerMemory& opt = find_optimizer(options.optimizer);
  const double peak = options.bf16 ? device.peak_bf16_flops : device.peak_fp32_flops;
  if (!(peak > 0) || !(device.memory_bandwidth_bytes_per_s > 0))
    throw InputError("device \"" + device.name + "\": needs positive peak FLOP/s and memory bandwidth");
  const bool curve = options.efficiency == 0 && has_gemm_curve(device, options.bf16);
  const double flops_per_s = peak * (options.efficiency > 0 ? options.efficiency : kConstantEfficiency);
  const double bw = achieved_memory_bandwidth(device);
  const int eb = options.bf16 ? 2 : 4;
  const double launch = launch_seconds(device);  // measured devices only
  const int64_t launch_ns = std::llround(launch * 1e9);

  Profile p;
  p.model = model.name();
  p.source = "analytic";
  p.device.name = device.name;
  p.micro_batch = micro_batch;
  p.edges = model.edges();
  for (const LayerSpec& l : model.layers()) {
    const LayerCost c = layer_cost(l, micro_batch, eb);
    const double params = static_cast<double>(layer_parameter_count(l));
    LayerProfile lp;
    lp.name = l.name;
    lp.kind = std::string(to_string(l.kind));
    lp.module = l.module;
    lp.output_bytes = c.output_bytes;
    lp.stash_bytes = c.stash_bytes;
    lp.workspace_bytes = c.workspace_bytes;
    lp.weight_pending_bytes = c.weight_pending_bytes;
    lp.parameter_bytes = to_bytes(l, params * opt.weight_bytes);
    lp.optimizer_bytes = to_bytes(l, params * (opt.total() - 2 * opt.weight_bytes));
    const PassGemms gemms = curve ? layer_gemms(l, double(micro_batch)) : PassGemms{};
    const bool block = l.kind == LayerKind::attention || l.kind == LayerKind::transformer_block;
    if (l.kind == LayerKind::input) {
      lp.is_data_loading = true;
    } else if (curve && block) {
      const PassSeconds t = block_seconds(device, block_shape(l, double(micro_batch)), BlockKernels{}, eb);
      lp.forward_ns = pass_ns(l, t.f);
      lp.backward_input_ns = pass_ns(l, t.b);
      lp.backward_weight_ns = pass_ns(l, t.w);
    } else if (!gemms.fwd.empty()) {
      const double f = total_gemm_seconds(device, gemms.fwd, eb) + launch * double(gemms.fwd.size());
      const double bi = total_gemm_seconds(device, gemms.bin, eb) + launch * double(gemms.bin.size());
      const double bw_s = total_gemm_seconds(device, gemms.bw, eb) + launch * double(gemms.bw.size());
      lp.forward_ns = pass_ns(l, std::max(f, c.forward_mem_bytes / bw));
      const int64_t backward = pass_ns(l, std::max(bi + bw_s, c.backward_mem_bytes / bw));
      lp.backward_input_ns = std::llround(double(backward) * bi / (bi + bw_s));
      lp.backward_weight_ns = backward - lp.backward_input_ns;
    } else {
      const double rate = flops_per_s * gemm_efficiency(c.forward_flops, params, options.gemm_half_rows);
      lp.forward_ns = pass_ns(l, roofline_seconds(c.forward_flops, c.forward_mem_bytes, rate, bw)) + launch_ns;
      const double bflops = c.backward_input_flops + c.backward_weight_flops;
      const bool has_backward = bflops > 0 || c.backward_mem_bytes > 0;
      const int64_t backward =
          pass_ns(l, roofline_seconds(bflops, c.backward_mem_bytes, rate, bw)) + (has_backward ? launch_ns : 0);
      lp.backward_input_ns = bflops > 0 ? std::llround(double(backward) * c.backward_input_flops / bflops) : backward;
      lp.backward_weight_ns = backward - lp.backward_input_ns;
    }
    p.layers.push_back(std::move(lp));
  }
  validate_profile(p, "the analytic profile of " + model.name() + " at micro-batch " + std::to_string(micro_batch) +
                          " on " + device.name);
  return p;
}

double model_forward_flops_per_sample(const Model& model) {
  double total = 0;
  for (const LayerSpec& l : model.layers()) total += layer_cost(l, 1).forward_flops;
  return total;
}

double model_flops_per_sample(const Model& model) {
  double total = 0;
  for (const LayerSpec& l : model.layers()) {
    const LayerCost c = layer_cost(l, 1);
    total += c.forward_flops + c.backward_input_flops + c.backward_weight_flops;
  }
  return total;
}

int64_t model_parameter_count(const Model& model) {
  int64_t total = 0;
  for (const LayerSpec& l : model.layers())
    if (__builtin_add_overflow(total, layer_parameter_count(l), &total))
      throw InputError("model \"" + model.name() + "\": more than 2^63 parameters");
  return total;
}

}  // namespace pw::models
