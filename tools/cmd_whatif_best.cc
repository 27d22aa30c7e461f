// `pipewright whatif best`: the 3D (tensor x pipeline x data) layout search for a GPT on a
// cluster of nodes (whatif/megatron.h): every layout of the --tp/--pp/--dp/--micro-batch/
// --chunks axes (all that fit the shape when not given), each simulated; prints the best, the
// time/memory frontier and, with --all, every candidate. Exit 3 when no layout fits.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "models/defaults.h"
#include "models/device.h"
#include "models/error.h"
#include "models/json_util.h"
#include "models/output_set.h"
#include "tools/cmd_whatif_best.h"
#include "tools/flag_checks.h"
#include "whatif/best_json.h"
#include "whatif/chart_svg.h"
#include "whatif/megatron.h"

namespace pw::tools {
namespace {

struct BestArgs {
  whatif::GptShape g;
  int64_t batch = 1536;
  int devices = 1024, devices_per_node = 8;
  std::string device = models::kDefaultDevice, intra = models::kDefaultIntraNode, inter = models::kDefaultInterconnect;
  double efficiency = models::kDefaultEfficiency;
  std::string kernels = "pipewright";
  bool fp32 = false;
  std::string dtype;  // "" = models::default_dtype of --device
  std::vector<int> tp, pp, dp, micro_batch, chunks, stage_layers;
  std::string recompute = "auto", sequence_parallel = "auto", zero1 = "auto";
  int threads = 0;
  bool json = false, all = false;
  bool progress = false, no_progress = false;
  std::string svg;
};

std::vector<bool> on_off(const std::string& v, const std::string& flag) {
  if (v == "auto") return {true, false};
  if (v == "on") return {true};
  if (v == "off") return {false};
  throw InputError(flag + ": expected on, off or auto, got \"" + v + "\"");
}

std::string line(const whatif::Layout& l, const whatif::Evaluation& e) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "t %d p %d d %d b %d v %d rc %s sp %s z1 %s: %.3f s, %.1f TFLOP/s/dev, MFU %.3f, %.1f GB", l.tp, l.pp,
                l.dp, l.micro_batch, l.chunks, l.recompute ? "on" : "off", l.sequence_parallel ? "on" : "off",
                l.zero1 ? "on" : "off", e.iteration_s, e.tflops_per_device, e.mfu, e.peak_memory_bytes / 1e9);
  return buf;
}

// The machine the flags describe; InputError for a bad size, efficiency, kernel set or dtype.
whatif::Machine machine_of(const BestArgs& a) {
  if (a.devices < 1 || a.devices_per_node < 1) throw InputError("--devices, --devices-per-node: expected >= 1");
  if (a.devices > a.devices_per_node && a.devices % a.devices_per_node)
    throw InputError("--devices: expected a multiple of --devices-per-node (" + std::to_string(a.devices_per_node) +
                     ")");
  if (!(a.efficiency >= 0 && a.efficiency <= 1)) throw InputError("--efficiency: expected a value in [0, 1]");
  whatif::Machine m;
  m.device = models::find_device(a.device);
  m.intra = models::find_link(a.intra);
  m.inter = models::find_link(a.inter);
  m.devices = a.devices;
  m.devices_per_node = std::min(a.devices_per_node, a.devices);
  m.efficiency = a.efficiency;
  if (a.kernels == "megatron") m.kernels = models::kMegatronKernels;
  else if (a.kernels != "pipewright")
    throw InputError("--kernels: expected pipewright or megatron, got \"" + a.kernels + "\"");
  if (a.fp32 && !a.dtype.empty() && a.dtype != "fp32")
    throw InputError("--fp32 and --dtype " + a.dtype + ": give one of them");
  m.bf16 = a.fp32 ? false : a.dtype.empty() ? models::default_bf16(m.device) : models::parse_dtype(a.dtype, "--dtype");
  return m;
}

// The search axes the flags restrict; InputError for a bad value.
whatif::SearchAxes axes_of(const BestArgs& a) {
  whatif::SearchAxes axes;
  axes.tp = a.tp;
  axes.pp = a.pp;
  axes.dp = a.dp;
  axes.micro_batch = a.micro_batch;
  axes.chunks = a.chunks;
  axes.stage_layers = a.stage_layers;
  for (int n : a.stage_layers)
    if (n < 0) throw InputError("--stage-layers: expected block counts >= 0");
  axes.recompute = on_off(a.recompute, "--recompute");
  axes.sequence_parallel = on_off(a.sequence_parallel, "--sequence-parallel");
  axes.zero1 = on_off(a.zero1, "--zero1");
  for (const auto* list : {&a.tp, &a.pp, &a.dp, &a.micro_batch, &a.chunks})
    for (int v : *list)
      if (v < 1) throw InputError("--tp/--pp/--dp/--micro-batch/--chunks: expected integers >= 1");
  return axes;
}

// The iteration of each frontier layout split into compute, bubble, TP, PP and DP, as SVG.
std::string frontier_svg(const BestArgs& a, const whatif::SearchResult& r) {
  whatif::BarChart c;
  c.title = "Time per iteration of the frontier layouts: GPT l " + std::to_string(a.g.layers) + " h " +
            std::to_string(a.g.hidden) + " on " + std::to_string(a.devices) + " x " + a.device;
  c.x_label = "layout (t, p, d, micro-batch, chunks; R recompute, S sequence parallel, Z ZeRO-1)";
  c.y_label = "seconds per iteration";
  c.stacked = true;
  c.series = {{"compute", {}, ""},
              {"bubble (idle)", {}, ""},
              {"TP all-reduce", {}, ""},
              {"PP transfers (overlapped)", {}, ""},
              {"DP all-reduce", {}, ""}};
  for (int k : r.frontier) {
    const auto& l = r.layouts[k];
    const auto& e = r.evaluations[k];
    c.categories.push_back(std::to_string(l.tp) + "," + std::to_string(l.pp) + "," + std::to_string(l.dp) + "," +
                           std::to_string(l.micro_batch) + "," + std::to_string(l.chunks) + (l.recompute ? " R" : "") +
                           (l.sequence_parallel ? " S" : "") + (l.zero1 ? " Z" : ""));
    const double vals[] = {e.split.compute, e.split.bubble, e.split.tp, e.split.pp, e.split.dp};
    for (int q = 0; q < 5; ++q) c.series[q].values.push_back(vals[q]);
  }
  c.width = std::max(860, 140 * static_cast<int>(r.frontier.size()) + 200);
  return whatif::render_bar_chart_svg(c);
}

void print_text(const BestArgs& a, const whatif::SearchResult& r) {
  std::cout << r.layouts.size() << " layouts of GPT l " << a.g.layers << " h " << a.g.hidden << " on " << a.devices
            << " x " << a.device << "\n";
  const auto& e = r.evaluations[r.best];
  std::cout << "best: " << line(r.layouts[r.best], e) << "\n  split: compute " << e.split.compute << " s, bubble "
            << e.split.bubble << " s, tp " << e.split.tp << " s, pp " << e.split.pp << " s, dp " << e.split.dp
            << " s\nfrontier (time vs memory):\n";
  for (int k : r.frontier) std::cout << "  " << line(r.layouts[k], r.evaluations[k]) << "\n";
  if (a.all)
    for (size_t k = 0; k < r.layouts.size(); ++k)
      std::cout << (r.evaluations[k].feasible ? "  " : "  [" + r.evaluations[k].reason + "] ")
                << line(r.layouts[k], r.evaluations[k]) << "\n";
}

void run_best(const BestArgs& a) {
  if (a.threads < 0) throw InputError("--threads: expected an integer >= 0");
  for (auto [v, flag] : {std::pair{a.g.layers, "--layers"},
                         {a.g.hidden, "--d-model"},
                         {a.g.heads, "--heads"},
                         {a.g.seq, "--seq"},
                         {a.g.vocab, "--vocab"},
                         {a.batch, "--batch"}})
    if (v < 1) throw InputError(std::string(flag) + ": expected an integer >= 1");
  const whatif::Machine m = machine_of(a);
  const whatif::SearchAxes axes = axes_of(a);
  whatif::SearchResult r =
      whatif::search_layouts(a.g, a.batch, m, axes, a.threads, whatif::progress_mode(a.progress, a.no_progress));
  if (r.best < 0)  // nothing printed: exit 3 with one line
    throw Infeasible("whatif best: no layout fits (" + std::to_string(r.layouts.size()) + " candidates)");
  const std::string svg = a.svg.empty() ? "" : frontier_svg(a, r);
  if (a.json) std::cout << Json(whatif::BestDocument{r, a.all}).dump(2) << "\n";
  else print_text(a, r);
  if (!svg.empty()) write_file_atomic(a.svg, svg);
}

}  // namespace

void add_whatif_best(CLI::App* whatif) {
  auto a = std::make_shared<BestArgs>();
  auto* s = whatif->add_subcommand("best", "3D layout search (tensor x pipeline x data parallel) for a GPT");
  s->add_option("--layers", a->g.layers, "transformer blocks")->capture_default_str();
  s->add_option("--d-model", a->g.hidden, "hidden size")->capture_default_str();
  s->add_option("--heads", a->g.heads, "attention heads")->capture_default_str();
  s->add_option("--seq", a->g.seq, "sequence length")->capture_default_str();
  s->add_option("--vocab", a->g.vocab, "vocabulary size")->capture_default_str();
  s->add_option("--batch", a->batch, "samples per iteration (global batch)")->capture_default_str();
  s->add_option("--devices", a->devices, "devices in all")->capture_default_str();
  s->add_option("--devices-per-node", a->devices_per_node, "devices joined by --intra-node")->capture_default_str();
  s->add_option("--device", a->device, "device kind from the catalog")->capture_default_str();
  s->add_option("--intra-node", a->intra, "link inside a node")->capture_default_str();
  s->add_option("--interconnect", a->inter, "link between nodes (per device)")->capture_default_str();
  s->add_option("--efficiency", a->efficiency, kEfficiencyHelp)->capture_default_str();
  s->add_option("--kernels", a->kernels,
                "memory-bound kernels of a block under the GEMM curve: pipewright (layer norms, residual adds, GeLU, "
                "softmax: the GPT `plan` prices) | megatron (also hidden and attention dropout and fp32 gradient "
                "accumulation: Megatron-LM's GPT of SC'21)")
      ->capture_default_str();
  s->add_option("--dtype", a->dtype, "fp32 | bf16 (default: bf16 on an accelerator, fp32 on a CPU)");
  s->add_flag("--fp32", a->fp32, "same as --dtype fp32");
  s->add_option("--tp", a->tp, "tensor-parallel sizes to try (default: divisors of a node)")->delimiter(',');
  s->add_option("--pp", a->pp, "pipeline sizes to try (default: all that divide)")->delimiter(',');
  s->add_option("--dp", a->dp, "data-parallel sizes to try (default: all that divide)")->delimiter(',');
  s->add_option("--micro-batch", a->micro_batch, "micro-batch sizes (default: 1,2,4,8)")->delimiter(',');
  s->add_option("--chunks", a->chunks, "interleaving chunks v (default: 1,2,4; 1 = plain 1F1B)")->delimiter(',');
  s->add_option("--stage-layers", a->stage_layers,
                "transformer blocks of each of the p x v pipeline stages, e.g. 7,7,6,4 (default: equal, Megatron's "
                "cut); only layouts with that many stages are searched")
      ->delimiter(',');
  s->add_option("--recompute", a->recompute, "on | off | auto (both)")->capture_default_str();
  s->add_option("--sequence-parallel", a->sequence_parallel, "on | off | auto (both)")->capture_default_str();
  s->add_option("--zero1", a->zero1, "on | off | auto (both)")->capture_default_str();
  s->add_option("--threads", a->threads, "worker threads (default: all hardware threads)");
  s->add_flag("--json", a->json, "print JSON (pipewright.whatif-best/1)");
  s->add_flag(
      "--progress", a->progress,
      "progress lines on a pipe from the start (default there: a line every 10% or 10 s once a run takes over 1 s)");
  s->add_flag("--no-progress", a->no_progress, "no progress output");
  s->add_flag("--all", a->all, "also list every candidate");
  s->add_option("--svg", a->svg, "write the time split of the frontier layouts (stacked bars) to this SVG file");
  s->callback([a] {
    OutputSet outputs;
    outputs.add("--svg", a->svg);
    run_best(*a);
    outputs.commit();
  });
}

}  // namespace pw::tools
