#include "models/pipedream_import.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "models/error.h"
#include "models/error_text.h"
#include "models/input_file.h"
#include "models/json_util.h"
#include "models/limits.h"

namespace pw::models {

int64_t infer_pipedream_batch(const Profile& p) {
  const LayerProfile* input = nullptr;
  for (const auto& l : p.layers)
    if (l.is_data_loading) {
      if (input) return 0;
      input = &l;
    }
  if (!input || input->output_bytes <= 0) return 0;
  for (int64_t side : {224, 299, 331}) {
    const int64_t per_sample = 4 * 3 * side * side;
    if (input->output_bytes % per_sample != 0) continue;
    const int64_t batch = input->output_bytes / per_sample;
    // Past what a profile may state as its micro-batch, the guess is not a batch size.
    return batch <= limits::kMicroBatchSize.max ? batch : 0;
  }
  return 0;
}

namespace {

constexpr std::string_view kSep = " -- ";

// Splits s at every occurrence of sep, as a loop of find calls would: returns the number of
// parts and stores the first `cap` of them in out.
size_t split(std::string_view s, std::string_view sep, std::string_view* out, size_t cap) {
  size_t pos = 0, count = 0;
  while (true) {
    const size_t k = s.find(sep, pos);
    const std::string_view part = s.substr(pos, k == std::string_view::npos ? std::string_view::npos : k - pos);
    if (count < cap) out[count] = part;
    ++count;
    if (k == std::string_view::npos) return count;
    pos = k + sep.size();
  }
}

// Parses "<digits>[.<digits>]" into (integer part, fraction digits); false when malformed.
bool parse_decimal(std::string_view s, std::string_view& int_part, std::string_view& frac) {
  size_t dot = s.find('.');
  int_part = s.substr(0, dot);
  frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (int_part.empty()) return false;
  if (dot != std::string_view::npos && frac.empty()) return false;
  auto digits = [](std::string_view d) {
    return std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return digits(int_part) && digits(frac);
}

// The number the digits spell; `where()` (called only on overflow) names the place in the message.
template <class Where>
int64_t to_int(std::string_view digits, const Where& where, std::string_view what) {
  int64_t v = 0;
  for (char c : digits) {
    if (v > (std::numeric_limits<int64_t>::max() - 9) / 10)
      throw InputError(where() + ": " + std::string(what) + " too large");
    v = v * 10 + (c - '0');
  }
  return v;
}

// parse_ms_to_ns and parse_bytes with the message's place built only when one is thrown.
template <class Where>
int64_t ms_to_ns(std::string_view s, const Where& where) {
  std::string_view ip, frac;
  if (!parse_decimal(s, ip, frac) || frac.size() > 6)
    throw InputError(where() +
                     ": expected milliseconds as a non-negative decimal with at most 6 "
                     "decimals, got \"" +
                     std::string(s) + "\"");
  // The bound every reader puts on one op's duration (a profile's forward_ns, the flags' --t-f),
  // checked on the whole milliseconds first so that the product cannot leave int64.
  auto too_long = [&] {
    return InputError(where() + ": expected at most " + std::to_string(limits::kDurationNs.max / 1000000) +
                      " ms, got \"" + std::string(s) + "\"");
  };
  const int64_t v = to_int(ip, where, "time");
  if (v > limits::kDurationNs.max / 1000000) throw too_long();
  int64_t f = to_int(frac, where, "time");
  for (size_t k = frac.size(); k < 6; ++k) f *= 10;
  const int64_t ns = v * 1000000 + f;
  if (ns > limits::kDurationNs.max) throw too_long();
  return ns;
}

// The bound every reader puts on a size (a profile's output_bytes): `bytes` when within it.
template <class Where>
int64_t check_bytes(int64_t bytes, const Where& where) {
  if (bytes > limits::kBytes.max)
    throw InputError(where() + ": expected at most " + std::to_string(limits::kBytes.max) + " bytes, got " +
                     std::to_string(bytes));
  return bytes;
}

template <class Where>
int64_t to_bytes(std::string_view s, const Where& where) {
  std::string_view ip, frac;
  if (!parse_decimal(s, ip, frac) || !std::all_of(frac.begin(), frac.end(), [](char c) { return c == '0'; }))
    throw InputError(where() + ": expected a non-negative whole number of bytes, got \"" + std::string(s) + "\"");
  return check_bytes(to_int(ip, where, "size"), where);
}

std::string model_name_from_path(const std::string& file) {
  std::filesystem::path p(file);
  std::string stem = p.stem().string();
  std::string dir = p.parent_path().filename().string();
  if (stem.rfind("graph", 0) == 0 && !dir.empty()) return dir + stem.substr(5);
  if (stem.rfind("gpus=", 0) == 0 && !dir.empty()) return dir;
  return stem.empty() ? std::string("pipedream") : stem;
}

int64_t infer_micro_batch(const Profile& p) {
  const int64_t b = infer_pipedream_batch(p);
  return b > 0 ? b : 1;
}

struct RawNode {
  std::string_view id, desc;  // into the parsed text
  int line = 0;
  LayerProfile prof;
  int stage = -1;
};

}  // namespace

int64_t parse_ms_to_ns(std::string_view s, const std::string& where) {
  return ms_to_ns(s, [&] { return where; });
}

int64_t parse_bytes(std::string_view s, const std::string& where) {
  return to_bytes(s, [&] { return where; });
}

PipeDreamGraph parse_pipedream_graph(std::string_view text, const std::string& file) {
  check_utf8(text, file);  // names end up in JSON, which holds only UTF-8
  std::vector<RawNode> nodes;
  std::unordered_map<std::string_view, int> index;  // keys view `text`
  struct RawEdge {
    int from, to, line;
  };
  std::vector<RawEdge> edges;
  std::unordered_set<uint64_t> seen_edges;  // from << 32 | to
  bool has_stage = false;

  int line_no = 0;
  size_t pos = 0;
  // Messages' "<file>:<line>" (built only when one is thrown).
  auto at = [&] { return file + ":" + std::to_string(line_no); };
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (line.front() == '\t') {
      std::string_view tok[2];
      if (split(line.substr(1), kSep, tok, 2) != 2 || tok[0].empty() || tok[1].empty())
        throw InputError(at() + ": expected an edge line \"\\t<src_id> -- <dst_id>\"");
      auto a = index.find(tok[0]);
      auto b = index.find(tok[1]);
      if (a == index.end())
        throw InputError(at() + ": edge from unknown node \"" + std::string(tok[0]) +
                         "\" (expected a node defined on an earlier line)");
      if (b == index.end())
        throw InputError(at() + ": edge to unknown node \"" + std::string(tok[1]) +
                         "\" (expected a node defined on an earlier line)");
      if (a->second == b->second)
        throw InputError(at() + ": self-loop on \"" + std::string(tok[0]) + "\" (expected a DAG)");
      if (!seen_edges.insert(static_cast<uint64_t>(a->second) << 32 | static_cast<uint32_t>(b->second)).second)
        throw InputError(at() + ": duplicate edge " + std::string(tok[0]) + " -- " + std::string(tok[1]));
      edges.push_back({a->second, b->second, line_no});
      continue;
    }
    if (!edges.empty()) throw InputError(at() + ": node line after edge lines (expected all node lines first)");
    std::string_view tok[4];
    const size_t ntok = split(line, kSep, tok, 4);
    if (ntok < 3 || ntok > 4)
      throw InputError(at() +
                       ": expected \"<id> -- <description> -- forward_compute_time=..., "
                       "backward_compute_time=..., activation_size=..., parameter_size=...[ -- stage_id=N]\"");
    RawNode n;
    n.id = tok[0];
    n.desc = tok[1];
    n.line = line_no;
    if (n.id.empty()) throw InputError(at() + ": empty node id");
    std::string_view metrics[4];
    const size_t nmetrics = split(tok[2], ", ", metrics, 4);
    static const char* kKeys[] = {"forward_compute_time", "backward_compute_time", "activation_size", "parameter_size"};
    if (nmetrics != 4)
      throw InputError(at() +
                       ": expected 4 metrics (forward_compute_time, backward_compute_time, "
                       "activation_size, parameter_size), got " +
                       std::to_string(nmetrics));
    std::string_view val[4];
    for (int k = 0; k < 4; ++k) {
      size_t eq = metrics[k].find('=');
      if (eq == std::string_view::npos || metrics[k].substr(0, eq) != kKeys[k])
        throw InputError(at() + ": expected \"" + kKeys[k] + "=<value>\", got \"" + std::string(metrics[k]) + "\"");
      val[k] = metrics[k].substr(eq + 1);
    }
    n.prof.name = std::string(n.id);
    n.prof.kind = std::string(n.desc);
    n.prof.forward_ns = ms_to_ns(val[0], [&] { return at() + ": forward_compute_time"; });
    n.prof.backward_input_ns = ms_to_ns(val[1], [&] { return at() + ": backward_compute_time"; });
    auto activation_at = [&] { return at() + ": activation_size"; };
    if (!val[2].empty() && val[2].front() == '[') {
      if (val[2].size() < 2 || val[2].back() != ']')
        throw InputError(at() + ": activation_size: expected a list \"[a; b; ...]\"");
      int64_t sum = 0;
      std::string_view rest = val[2].substr(1, val[2].size() - 2);
      while (true) {  // the parts between "; " separators
        const size_t k = rest.find("; ");
        // Each part is within kBytes, so the sum of two cannot leave int64 before it is checked.
        sum = check_bytes(sum + to_bytes(rest.substr(0, k), activation_at), activation_at);
        if (k == std::string_view::npos) break;
        rest.remove_prefix(k + 2);
      }
      n.prof.output_bytes = sum;
    } else {
      n.prof.output_bytes = to_bytes(val[2], activation_at);
    }
    n.prof.stash_bytes = n.prof.output_bytes;
    n.prof.parameter_bytes = to_bytes(val[3], [&] { return at() + ": parameter_size"; });
    if (ntok == 4) {
      std::string_view s = tok[3];
      constexpr std::string_view key = "stage_id=";
      if (s.substr(0, key.size()) != key || s.size() == key.size() ||
          !std::all_of(s.begin() + key.size(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw InputError(at() + ": expected \"stage_id=<non-negative integer>\", got \"" + std::string(s) + "\"");
      const int64_t stage = to_int(s.substr(key.size()), at, "stage_id");
      // Stage ids count from 0: one below the most stages a plan may have.
      if (stage >= limits::kStages.max)
        throw InputError(at() + ": stage_id " + std::to_string(stage) + " is past the last stage a plan may have (" +
                         std::to_string(limits::kStages.max - 1) + ")");
      n.stage = static_cast<int>(stage);
      has_stage = true;
    }
    if (static_cast<int64_t>(nodes.size()) >= limits::kLayers.max)
      throw InputError(at() + ": more than " + std::to_string(limits::kLayers.max) + " node lines (layers)");
    if (!index.emplace(n.id, static_cast<int>(nodes.size())).second)
      throw InputError(at() + ": duplicate node \"" + std::string(n.id) + "\" (expected unique node ids)");
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) throw InputError(file + ": no node lines (expected a PipeDream graph)");

  const int n = static_cast<int>(nodes.size());
  std::vector<Edge> dag;
  dag.reserve(edges.size());
  std::vector<bool> has_input(n, false);
  for (const auto& e : edges) {
    dag.push_back({e.from, e.to});
    has_input[e.to] = true;
  }
  for (int i = 0; i < n; ++i)
    if (!has_input[i] && nodes[i].desc.substr(0, 5) == "Input") nodes[i].prof.is_data_loading = true;

  // Stable: among ready nodes the earliest line first.
  const std::vector<int> order = stable_topological_order(n, dag);
  if (static_cast<int>(order.size()) != n) {
    // Walk back along in-edges among unfinished nodes until a node repeats: that is a cycle.
    std::vector<bool> unfinished(n, true);
    for (int v : order) unfinished[v] = false;
    std::vector<std::vector<int>> in_edge(n);
    for (size_t k = 0; k < edges.size(); ++k) in_edge[edges[k].to].push_back(static_cast<int>(k));
    int v = 0;
    while (!unfinished[v]) ++v;
    std::vector<int> visit(n, -1);
    std::vector<int> path_edges;
    while (visit[v] < 0) {
      visit[v] = static_cast<int>(path_edges.size());
      for (int k : in_edge[v])
        if (unfinished[edges[k].from]) {
          path_edges.push_back(k);
          v = edges[k].from;
          break;
        }
    }
    int first = path_edges[visit[v]];
    for (size_t k = visit[v]; k < path_edges.size(); ++k)
      if (edges[path_edges[k]].line < edges[first].line) first = path_edges[k];
    throw InputError(file + ":" + std::to_string(edges[first].line) + ": edge " +
                     std::string(nodes[edges[first].from].id) + " -- " + std::string(nodes[edges[first].to].id) +
                     " closes a cycle (expected a DAG)");
  }

  PipeDreamGraph g;
  std::vector<int> pos_of(n);
  for (int k = 0; k < n; ++k) pos_of[order[k]] = k;
  g.profile.model = model_name_from_path(file);
  g.profile.source = "pipedream";
  g.profile.device.name = "unknown (PipeDream profile)";
  g.profile.layers.reserve(n);
  g.stage_id.reserve(n);
  g.line.reserve(n);
  for (int v : order) {
    g.profile.layers.push_back(std::move(nodes[v].prof));
    g.stage_id.push_back(nodes[v].stage);
    g.line.push_back(nodes[v].line);
  }
  g.profile.edges.reserve(edges.size());
  for (const auto& e : edges) g.profile.edges.push_back({pos_of[e.from], pos_of[e.to]});
  std::stable_sort(g.profile.edges.begin(), g.profile.edges.end(),
                   [](const Edge& a, const Edge& b) { return a.to != b.to ? a.to < b.to : a.from < b.from; });
  g.profile.micro_batch = infer_micro_batch(g.profile);
  g.has_stage_ids = has_stage;
  validate_profile(g.profile, file);
  return g;
}

PipeDreamGraph read_pipedream_graph(const std::string& file) {
  return parse_pipedream_graph(read_text_file(file), file);
}

Profile import_pipedream_graph(const std::string& file) { return read_pipedream_graph(file).profile; }

Profile load_any_profile_file(const std::string& file) {
  const std::string text = read_text_file(file);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    const std::string name = escape_for_message(file, 200);
    const Json j = parse_json_text(text, name);
    try {
      return profile_from_json(j);
    } catch (const InputError& e) { throw InputError(name + ": " + e.what()); } catch (const Json::exception& e) {
      throw InputError(name + ": " + e.what());
    }
  }
  return parse_pipedream_graph(text, file).profile;
}

}  // namespace pw::models
