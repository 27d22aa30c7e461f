#include "models/device_file.h"

#include <algorithm>
#include <memory>

#include "models/error.h"
#include "models/limits.h"

namespace pw::models {

namespace {

double rate_field(const Json& j, std::string_view key, const std::string& path, double fallback) {
  return check_real_limit(get_number_or(j, key, path, fallback, 0.0), limits::kDeviceRate, join_path(path, key));
}

Provenance read_provenance(const Json& j, const std::string& path) {
  Provenance p;
  if (!j.contains("provenance")) return p;
  const std::string at = join_path(path, "provenance");
  const Json& o = require_object(j["provenance"], at);
  p.card = get_string_or(o, "card", at, "");
  p.driver = get_string_or(o, "driver", at, "");
  p.runtime = get_string_or(o, "runtime", at, "");
  p.date = get_string_or(o, "date", at, "");
  p.command = get_string_or(o, "command", at, "");
  p.host = get_string_or(o, "host", at, "");
  return p;
}

void read_gemms(const Json& j, const std::string& path, MeasuredDevice& m) {
  if (!j.contains("gemm")) return;
  const std::string at = join_path(path, "gemm");
  const Json& g = require_object(j["gemm"], at);
  const Json& sizes = require_array(g, "sizes", at);
  std::vector<int64_t> s;
  for (size_t i = 0; i < sizes.size(); ++i) {
    s.push_back(limited_value(sizes[i], join_path(join_path(at, "sizes"), i), limits::kGemmSize));
  }
  for (const auto& [key, value] : g.items()) {
    if (key == "sizes") continue;
    const auto p = parse_precision(key);
    if (!p) throw InputError(join_path(at, key) + ": expected a precision (fp32, tf32 or bf16)");
    GemmTable& t = m.table(*p);
    t.sizes = s;
    const Json& times = require_array(g, key, at);
    for (size_t i = 0; i < times.size(); ++i) {
      if (!times[i].is_number())
        throw InputError(join_path(join_path(at, key), i) + ": expected a number, got " + json_type_name(times[i]));
      t.seconds.push_back(check_real_limit(times[i].get<double>(), limits::kSeconds, join_path(join_path(at, key), i)));
    }
    if (const std::string why = t.problem(); !why.empty()) throw InputError(join_path(at, key) + ": " + why);
  }
}

std::vector<MeasuredLayer> read_layers(const Json& j, const std::string& path) {
  std::vector<MeasuredLayer> out;
  if (!j.contains("layers")) return out;
  const Json& a = require_array(j, "layers", path);
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string at = join_path(join_path(path, "layers"), i);
    const Json& o = require_object(a[i], at);
    out.push_back({get_string(o, "kind", at), get_string_or(o, "shape", at, ""),
                   check_real_limit(get_number(o, "forward_s", at), limits::kSeconds, join_path(at, "forward_s")),
                   get_real_limited_or(o, "backward_input_s", at, 0.0, limits::kSeconds),
                   get_real_limited_or(o, "backward_weight_s", at, 0.0, limits::kSeconds)});
  }
  return out;
}

// The best measured rate at p, or 0.
double best(const MeasuredDevice& m, Precision p) { return m.table(p).empty() ? 0 : m.table(p).best_rate(); }

std::string measured_source(const MeasuredDevice& m, std::string_view what) {
  std::string s = "measured " + std::string(what);
  if (!m.provenance.card.empty()) s += " on " + m.provenance.card;
  if (!m.provenance.date.empty()) s += ", " + m.provenance.date;
  return s + " (pipewright calibrate)";
}

}  // namespace

bool is_device_file(const Json& j) {
  return j.is_object() && j.contains("format") && j["format"].is_string() &&
         j["format"].get<std::string>().rfind("pipewright." + std::string(kDeviceFileKind) + "/", 0) == 0;
}

DeviceSpec device_from_file_json(const Json& j, const std::string& path) {
  require_object(j, path);
  check_format(j, kDeviceFileKind, kDeviceFileVersion, path);
  auto m = std::make_shared<MeasuredDevice>();
  m->base = get_string_or(j, "base", path, "");
  DeviceSpec d;
  if (!m->base.empty()) {
    try {
      d = find_device(m->base);
    } catch (const InputError& e) { throw InputError(join_path(path, "base") + ": " + e.what()); }
  }
  d.name = get_string(j, "name", path);
  m->provenance = read_provenance(j, path);
  m->copy_bytes_per_s = rate_field(j, "copy_bytes_per_s", path, 0);
  m->launch_seconds = check_real_limit(get_number_or(j, "launch_seconds", path, 0.0, 0.0), limits::kSeconds,
                                       join_path(path, "launch_seconds"));
  read_gemms(j, path, *m);
  m->layers = read_layers(j, path);

  const double fp32 = std::max(best(*m, Precision::fp32), best(*m, Precision::tf32));
  d.peak_fp32_flops = rate_field(j, "peak_fp32_flops", path, d.peak_fp32_flops > 0 ? d.peak_fp32_flops : fp32);
  const double bf16 = best(*m, Precision::bf16) > 0 ? best(*m, Precision::bf16) : d.peak_fp32_flops;
  d.peak_bf16_flops = rate_field(j, "peak_bf16_flops", path, d.peak_bf16_flops > 0 ? d.peak_bf16_flops : bf16);
  d.memory_bandwidth_bytes_per_s = rate_field(j, "memory_bandwidth_bytes_per_s", path,
                                              m->base.empty() ? m->copy_bytes_per_s : d.memory_bandwidth_bytes_per_s);
  if (m->base.empty() || j.contains("memory_bytes"))
    d.memory_bytes = get_limited(j, "memory_bytes", path, limits::kMemoryBytes);
  if (m->copy_bytes_per_s > 0) {
    d.memory_bandwidth_bytes_per_s = std::max(d.memory_bandwidth_bytes_per_s, m->copy_bytes_per_s);
    d.memory_efficiency = m->copy_bytes_per_s / d.memory_bandwidth_bytes_per_s;
    d.memory_source = measured_source(*m, "device copy");
  }
  if (!(d.peak_fp32_flops > 0) || !(d.memory_bandwidth_bytes_per_s > 0))
    throw InputError(path +
                     ": a device file needs a base, peak_fp32_flops or an fp32 table, and a copy rate or "
                     "memory_bandwidth_bytes_per_s");
  if (!m->table(Precision::bf16).empty() || !m->table(Precision::fp32).empty())
    d.gemm_source = measured_source(*m, "matrix products");
  d.source = m->base.empty() ? measured_source(*m, "device") : d.source + "; " + measured_source(*m, "rates");
  d.measured = std::move(m);
  return d;
}

namespace {

// The measured parts of a file: provenance, copy, launch, tables, layers.
void write_measurements(const MeasuredDevice& m, Json& j) {
  const Provenance& p = m.provenance;
  j["provenance"] = Json{{"card", p.card}, {"driver", p.driver},   {"runtime", p.runtime},
                         {"date", p.date}, {"command", p.command}, {"host", p.host}};
  j["copy_bytes_per_s"] = m.copy_bytes_per_s;
  j["launch_seconds"] = m.launch_seconds;
  Json g = Json::object();
  for (Precision pr : kPrecisions) {
    const GemmTable& t = m.table(pr);
    if (t.empty()) continue;
    g["sizes"] = t.sizes;
    g[std::string(to_string(pr))] = t.seconds;
  }
  if (!g.empty()) j["gemm"] = g;
  Json layers = Json::array();
  for (const MeasuredLayer& l : m.layers)
    layers.push_back(Json{{"kind", l.kind},
                          {"shape", l.shape},
                          {"forward_s", l.forward_s},
                          {"backward_input_s", l.backward_input_s},
                          {"backward_weight_s", l.backward_weight_s}});
  j["layers"] = layers;
}

}  // namespace

Json device_file_json(const DeviceSpec& d) {
  PW_CHECK(d.measured != nullptr, "device_file_json of a device that was not measured");
  const MeasuredDevice& m = *d.measured;
  Json j{{"format", format_tag(kDeviceFileKind, kDeviceFileVersion)}, {"name", d.name}};
  if (!m.base.empty()) j["base"] = m.base;
  j["peak_fp32_flops"] = d.peak_fp32_flops;
  j["peak_bf16_flops"] = d.peak_bf16_flops;
  j["memory_bandwidth_bytes_per_s"] = d.memory_bandwidth_bytes_per_s;
  j["memory_bytes"] = d.memory_bytes;
  write_measurements(m, j);
  return j;
}

DeviceSpec measured_device(const std::string& name, const MeasuredDevice& m, int64_t memory_bytes) {
  Json j{{"format", format_tag(kDeviceFileKind, kDeviceFileVersion)}, {"name", name}};
  if (!m.base.empty()) j["base"] = m.base;
  if (m.base.empty()) j["memory_bytes"] = memory_bytes;
  write_measurements(m, j);
  return device_from_file_json(j, "");
}

double launch_seconds(const DeviceSpec& d) { return d.measured == nullptr ? 0 : d.measured->launch_seconds; }

const GemmTable* measured_gemms(const DeviceSpec& d, Precision p) {
  if (d.measured == nullptr || d.measured->table(p).empty()) return nullptr;
  return &d.measured->table(p);
}

}  // namespace pw::models
