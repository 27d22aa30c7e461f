#include "tools/model_report.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <vector>

#include "models/cost.h"
#include "models/error.h"

namespace pw::tools {

namespace {

std::string printf_str(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Left-aligned first columns, right-aligned numbers.
class Table {
 public:
  Table(std::vector<std::string> header, size_t left_columns) : left_(left_columns) {
    rows_.push_back(std::move(header));
  }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& os) const {
    std::vector<size_t> width(rows_[0].size(), 0);
    for (const auto& r : rows_)
      for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    for (const auto& r : rows_) {
      std::string line;
      for (size_t c = 0; c < r.size(); ++c) {
        std::string pad(width[c] - r[c].size(), ' ');
        line += c ? "  " : "";
        line += c < left_ ? r[c] + pad : pad + r[c];
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      os << line << "\n";
    }
  }

 private:
  size_t left_;
  std::vector<std::vector<std::string>> rows_;
};

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string micros(int64_t ns) { return printf_str("%.3f", static_cast<double>(ns) / 1e3); }
std::string millis(int64_t ns) { return printf_str("%.3f ms", static_cast<double>(ns) / 1e6); }

}  // namespace

std::string human_count(double n) {
  static const char* prefixes[] = {"", " k", " M", " G", " T", " P", " E"};
  int k = 0;
  while (std::fabs(n) >= 999.5 && k < 6) {
    n /= 1000;
    ++k;
  }
  if (k == 0) return printf_str("%.0f", n);
  const char* fmt = std::fabs(n) >= 99.95 ? "%.0f" : std::fabs(n) >= 9.995 ? "%.1f" : "%.2f";
  return printf_str(fmt, n) + prefixes[k];
}

void print_model_summary(std::ostream& os, const ModelSource& src) {
  const models::Model& m = src.model;
  const int64_t params = models::model_parameter_count(m);
  os << "model        " << m.name();
  if (!src.family.empty()) os << " (zoo family " << src.family << ")";
  if (!src.file.empty()) os << " (from " << src.file << ")";
  os << "\n";
  os << "batch        " << m.batch() << "\n";
  os << "layers       " << m.size() << " (" << m.edges().size() << " edges)\n";
  os << "parameters   " << params << " (" << human_count(static_cast<double>(params)) << ", "
     << human_bytes(4.0 * static_cast<double>(params)) << " in fp32)\n";
  os << "FLOPs/sample " << human_count(models::model_forward_flops_per_sample(m)) << " forward, "
     << human_count(models::model_flops_per_sample(m)) << " forward+backward\n";
}

void print_model_layers(std::ostream& os, const models::Model& m) {
  Table t({"#", "layer", "kind", "output/sample", "parameters", "fwd FLOPs/sample"}, 4);
  for (size_t i = 0; i < m.size(); ++i) {
    const models::LayerSpec& l = m.layers()[i];
    t.add({std::to_string(i), l.name, std::string(models::to_string(l.kind)), shape_str(l.output_shape),
           std::to_string(models::layer_parameter_count(l)), human_count(models::layer_cost(l, 1).forward_flops)});
  }
  t.print(os);
}

Json model_summary_json(const ModelSource& src) {
  const models::Model& m = src.model;
  const int64_t params = models::model_parameter_count(m);
  Json j;
  j["format"] = format_tag("model-summary", 1);
  j["family"] = src.family.empty() ? Json(nullptr) : Json(src.family);
  j["name"] = m.name();
  j["file"] = src.file.empty() ? Json(nullptr) : Json(src.file);
  j["batch"] = m.batch();
  j["layers"] = m.size();
  j["edges"] = m.edges().size();
  j["parameters"] = params;
  j["parameter_bytes_fp32"] = 4 * params;
  j["forward_flops_per_sample"] = models::model_forward_flops_per_sample(m);
  j["flops_per_sample"] = models::model_flops_per_sample(m);
  return j;
}

void print_profile(std::ostream& os, const models::Profile& p) {
  os << "profile of " << p.model << " on " << p.device.name << " (" << p.source << ", micro-batch " << p.micro_batch
     << ")\n";
  Table t({"layer", "kind", "fwd us", "bwd-B us", "bwd-W us", "output", "stash", "params", "optimizer"}, 2);
  int64_t stash = 0, optimizer = 0, data_ns = 0;
  for (const models::LayerProfile& l : p.layers) {
    stash += l.stash_bytes;
    optimizer += l.optimizer_bytes;
    if (l.is_data_loading) data_ns += l.forward_ns;
    t.add({l.name, l.kind + (l.is_data_loading ? " (data)" : ""), micros(l.forward_ns), micros(l.backward_input_ns),
           micros(l.backward_weight_ns), human_bytes(double(l.output_bytes)), human_bytes(double(l.stash_bytes)),
           human_bytes(double(l.parameter_bytes)), human_bytes(double(l.optimizer_bytes))});
  }
  t.print(os);
  int64_t bwd_in = 0, bwd_w = 0;
  for (const auto& l : p.layers)
    if (!l.is_data_loading) {
      bwd_in += l.backward_input_ns;
      bwd_w += l.backward_weight_ns;
    }
  os << "total: forward " << millis(p.total_forward_ns()) << ", backward " << millis(p.total_backward_ns()) << " (B "
     << millis(bwd_in) << ", W " << millis(bwd_w) << "), compute per micro-batch "
     << millis(p.total_forward_ns() + p.total_backward_ns()) << "\n";
  if (data_ns > 0) os << "data loading: " << millis(data_ns) << " (not compute)\n";
  os << "memory: parameters " << human_bytes(double(p.total_parameter_bytes())) << ", optimizer "
     << human_bytes(double(optimizer)) << ", stash per micro-batch " << human_bytes(double(stash)) << "\n";
}

}  // namespace pw::tools
