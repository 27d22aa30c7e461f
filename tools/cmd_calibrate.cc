// `pipewright calibrate --device cpu|cuda[:N] -o FILE`: measures the device it runs on into a
// device file (pipewright.device/1, models/device_file.h) that every command taking --device
// reads: matrix products over a grid of shapes at fp32, TF32 and bf16 (those the device runs),
// a large copy, a launch, and the layer kinds of a model at representative sizes
// (exec/profile/calibrate.h). Prints what it measured, each layer kind beside the analytic
// cost model's prediction from the new file, so the file's fidelity shows at once.
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "models/cost.h"
#include "models/device_file.h"
#include "models/error.h"
#include "models/model_source.h"
#include "models/output_set.h"
#include "tools/command_registry.h"
#include "tools/zoo_flags.h"

#ifdef PW_HAVE_EXEC
#include "exec/device_timer.h"
#include "exec/profile/calibrate.h"
#include "exec/runtime/device_lanes.h"

namespace {

struct CalibrateArgs {
  std::string device = "cpu";
  std::string output;
  std::string name, base;
  std::vector<int64_t> sizes;
  std::vector<std::string> precisions{"fp32", "tf32", "bf16"};
  int repeats = 5;
  int threads = 0;
  double copy_bytes = 0;
  double memory_bytes = 0;
  std::string layer_model = "gpt";
  pw::models::ZooOptions zoo;
  int64_t layer_batch = 0;
  bool quiet = false;
};

// The grid and layer sizes that finish in about a minute: 2 cores (32 .. 512) or one GPU
// (64 .. 16384, the products of models up to 1T parameters); the GPU's layers are GPT-2
// small's at micro-batch 8, the CPU's those `train` uses by default.
std::vector<int64_t> default_sizes(bool gpu) {
  return gpu ? std::vector<int64_t>{64, 256, 1024, 4096, 16384} : std::vector<int64_t>{32, 128, 512};
}

// The catalog entry of a card, from its name ("NVIDIA H100 80GB HBM3" -> h100-80g), or "".
std::string catalog_base(const std::string& card) {
  struct Known {
    const char* marker;
    const char* entry;
  };
  for (const Known k : {Known{"H200", "h200-141g"}, Known{"H100", "h100-80g"}, Known{"A100-SXM4-40GB", "a100-40g"},
                        Known{"A100", "a100-80g"}, Known{"V100", "v100-32g"}})
    if (card.find(k.marker) != std::string::npos) return k.entry;
  return "";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

template <class T>
std::string joined(const std::vector<T>& v) {
  std::string s;
  for (const T& x : v) {
    if (!s.empty()) s += ",";
    if constexpr (std::is_same_v<T, std::string>) s += x;
    else s += std::to_string(x);
  }
  return s;
}

// The measurement as a command line (the file's provenance.command): every setting that
// shaped the numbers, defaults included.
std::string command_line(const CalibrateArgs& a, const pw::exec::CalibrateOptions& o) {
  std::string s = "pipewright calibrate --device " + a.device + " -o " + a.output + " --sizes " + joined(o.sizes) +
                  " --precisions " + joined(a.precisions) + " --repeats " + std::to_string(o.repeats) +
                  " --copy-bytes " + std::to_string(o.copy_bytes);
  if (a.device == "cpu") s += " --threads " + std::to_string(a.threads);
  if (!o.base.empty()) s += " --base " + o.base;
  s += " --layer-model " + a.layer_model;
  if (o.layer_model != nullptr) s += " --layer-batch " + std::to_string(o.layer_batch);
  return s;
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
std::string ms(double seconds) { return fixed(seconds * 1e3, 3); }

void print_summary(const pw::models::DeviceSpec& d, const pw::models::Model* model, int64_t batch) {
  const pw::models::MeasuredDevice& m = *d.measured;
  std::cout << "device " << d.name << ": " << m.provenance.card << " (" << m.provenance.runtime << ")\n";
  std::cout << "  copy " << fixed(m.copy_bytes_per_s / 1e9, 1) << " GB/s (read + written), launch "
            << fixed(m.launch_seconds * 1e6, 2) << " us\n";
  for (pw::models::Precision p : pw::models::kPrecisions) {
    const pw::models::GemmTable& t = m.table(p);
    if (t.empty()) continue;
    const double s = double(t.sizes.back());
    std::cout << "  " << pw::models::to_string(p) << " products: best " << fixed(t.best_rate() / 1e12, 2)
              << " TFLOP/s; " << t.sizes.back() << "^3 at " << fixed(t.rate(s, s, s) / 1e12, 2) << " TFLOP/s\n";
  }
  if (model == nullptr || m.layers.empty()) return;
  // The analytic model from the file just measured, at the same micro-batch (fp32).
  const pw::models::Profile p = pw::models::analytic_profile(*model, d, batch);
  std::cout << "  layer kinds (ms, measured / predicted from this file): kind, F, B, W\n";
  for (const pw::models::MeasuredLayer& l : m.layers) {
    const pw::models::LayerProfile* lp = nullptr;
    for (const auto& x : p.layers)
      if (x.kind == l.kind) {
        lp = &x;
        break;
      }
    std::cout << "    " << l.kind << "  " << ms(l.forward_s) << " / " << ms(lp ? lp->forward_ns * 1e-9 : 0) << "  "
              << ms(l.backward_input_s) << " / " << ms(lp ? lp->backward_input_ns * 1e-9 : 0) << "  "
              << ms(l.backward_weight_s) << " / " << ms(lp ? lp->backward_weight_ns * 1e-9 : 0) << "   (" << l.shape
              << ")\n";
  }
}

void run(CalibrateArgs& a, const CLI::App& sub) {
  const pw::exec::Device dev = pw::exec::parse_device_flag(a.device, "--device");
  pw::exec::check_device_usable(dev, "--device");
  if (a.output.empty()) throw pw::InputError("-o: the device file to write is required");
  std::vector<pw::models::Precision> precisions;
  for (const std::string& s : a.precisions) {
    const auto p = pw::models::parse_precision(s);
    if (!p) throw pw::InputError("--precisions: expected fp32, tf32 or bf16, got \"" + s + "\"");
    precisions.push_back(*p);
  }
  if (a.sizes.empty()) a.sizes = default_sizes(!dev.is_cpu());
  for (size_t i = 0; i < a.sizes.size(); ++i)
    if (a.sizes[i] < 1 || (i > 0 && a.sizes[i] <= a.sizes[i - 1]))
      throw pw::InputError("--sizes: expected ascending sizes >= 1, got " + std::to_string(a.sizes[i]) + " at " +
                           std::to_string(i + 1));
  std::unique_ptr<pw::exec::DeviceTimer> timer = pw::exec::make_device_timer(dev, a.threads);
  const pw::models::Provenance who = timer->provenance();
  pw::exec::CalibrateOptions o;
  o.base = sub.count("--base") > 0 ? a.base : catalog_base(who.card);
  if (!o.base.empty()) pw::models::find_device(o.base);  // an unknown --base fails before measuring
  o.name = !a.name.empty() ? a.name : (o.base.empty() ? dev.is_cpu() ? "cpu" : "cuda" : o.base) + "-measured";
  if (o.base.empty() && !(a.memory_bytes > 0))
    throw pw::InputError("--memory: needed without --base (the device's memory size), e.g. --memory 24GiB");
  o.memory_bytes = static_cast<int64_t>(a.memory_bytes);
  o.sizes = a.sizes;
  o.precisions = precisions;
  o.repeats = a.repeats;
  o.copy_bytes = a.copy_bytes > 0 ? static_cast<int64_t>(a.copy_bytes) : int64_t{dev.is_cpu() ? 256 : 1024} << 20;
  pw::models::ModelSource src;
  if (a.layer_model != "none") {
    const pw::models::ZooOptions defaults = dev.is_cpu() ? pw::tools::small_zoo_options() : pw::models::ZooOptions{};
    src = pw::models::resolve_model(a.layer_model, pw::tools::with_unset_sizes_from(a.zoo, defaults, sub),
                                    "--layer-model");
    o.layer_model = &src.model;
    o.layer_batch = a.layer_batch > 0 ? a.layer_batch : dev.is_cpu() ? 4 : 8;
  }
  if (!a.quiet) o.progress = [](const std::string& line) { std::cerr << "calibrate: " << line << "\n"; };
  const pw::models::DeviceSpec d = pw::exec::calibrate(*timer, o, utc_now(), command_line(a, o));
  pw::save_json_file(a.output, pw::models::device_file_json(d));
  print_summary(d, o.layer_model, o.layer_batch);
  std::cout << "wrote " << a.output << "\n";
}

pw::tools::CommandRegistrar register_calibrate("calibrate", [](CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* sub = app.add_subcommand(
      "calibrate", "Measure this machine's CPU or GPU into a device file (pipewright.device/1) for --device");
  sub->add_option("--device", a->device, "what to measure: cpu | cuda | cuda:N")->capture_default_str();
  sub->add_option("-o,--output", a->output, "the device file to write");
  sub->add_option("--name", a->name, "the device's name in the file (default: <base>-measured, cpu-measured)");
  sub->add_option("--base", a->base,
                  "catalog entry for the datasheet peaks and memory (default: from a GPU's name; none for a CPU)");
  sub->add_option("--memory", a->memory_bytes, "the device's memory without --base (e.g. 24GiB)");
  sub->add_option("--sizes", a->sizes,
                  "m, n and k of the product grid, ascending (default: cpu 32,128,512; "
                  "cuda 64,256,1024,4096,16384)")
      ->delimiter(',');
  sub->add_option("--precisions", a->precisions, "fp32,tf32,bf16 (those the device runs; the CPU runs fp32)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--repeats", a->repeats, "timed runs per measurement (median)")->capture_default_str();
  sub->add_option("--threads", a->threads, "cpu: OpenMP threads (0: all)")->capture_default_str();
  sub->add_option("--copy-bytes", a->copy_bytes, "bytes of the bandwidth copy (default: cpu 256MiB, cuda 1GiB)");
  sub->add_option("--layer-model", a->layer_model,
                  "model whose layer kinds are timed: a zoo family, a model file, or none")
      ->capture_default_str();
  sub->add_option("--layer-batch", a->layer_batch, "micro-batch of the layer timings (default: cpu 4, cuda 8)");
  pw::tools::add_zoo_size_options(sub, a->zoo, pw::models::ZooOptions{});
  sub->add_flag("-q,--quiet", a->quiet, "no progress lines on stderr");
  sub->callback([a, sub] { run(*a, *sub); });
});

}  // namespace
#endif  // PW_HAVE_EXEC
