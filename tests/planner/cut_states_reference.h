// Test helper: the straightforward cut-state enumeration planner/cut_states.cc had before it
// moved to flat bitsets and hashing (kept verbatim as the reference the fast one must equal
// field for field): vectors of node lists, an ordered map of antichains, a FIFO queue.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>

#include "models/error.h"
#include "planner/cut_states.h"

namespace pw::test::reference {

using planner::Bitset;
using planner::CutStates;
using planner::pipedream_kept_layers;

struct Dag {
  int n = 0;
  std::vector<bool> kept;
  std::vector<std::vector<int>> out, in;  // among kept layers
  std::vector<Bitset> anc, desc;          // strict, transitive
};

inline Dag build_dag(const models::Profile& p, const std::vector<bool>& kept) {
  Dag g;
  g.n = static_cast<int>(p.layers.size());
  g.kept = kept;
  g.out.assign(g.n, {});
  g.in.assign(g.n, {});
  for (const auto& e : p.edges)
    if (kept[e.from] && kept[e.to]) {
      g.out[e.from].push_back(e.to);
      g.in[e.to].push_back(e.from);
    }
  g.anc.assign(g.n, Bitset(g.n));
  g.desc.assign(g.n, Bitset(g.n));
  for (int v = 0; v < g.n; ++v)  // profile order is topological
    for (int u : g.in[v]) {
      g.anc[v].set(u);
      g.anc[v].or_with(g.anc[u]);
    }
  for (int v = g.n - 1; v >= 0; --v)
    for (int w : g.out[v]) {
      g.desc[v].set(w);
      g.desc[v].or_with(g.desc[w]);
    }
  return g;
}

// PipeDream's augment_antichain: the antichain plus every ancestor p of an antichain node a that
// has an out-edge to a node that is neither an ancestor of a nor a.
inline std::vector<int> augment(const Dag& g, const std::vector<int>& antichain) {
  Bitset extra(g.n);
  for (int a : antichain)
    for (int p = 0; p < g.n; ++p) {
      if (!g.anc[a].test(p)) continue;
      for (int y : g.out[p])
        if (!g.anc[a].test(y) && y != a) {
          extra.set(p);
          break;
        }
    }
  std::vector<int> aug;
  for (int p = 0; p < g.n; ++p)
    if (extra.test(p)) aug.push_back(p);
  for (int a : antichain)
    if (!extra.test(a)) aug.push_back(a);
  return aug;
}

// Nodes of the list without a descendant in the list.
inline std::vector<int> deaugment(const Dag& g, const std::vector<int>& list) {
  std::vector<int> out;
  for (int x : list) {
    bool dominated = false;
    for (int y : list)
      if (g.desc[x].test(y)) {
        dominated = true;
        break;
      }
    if (!dominated && std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Fills the per-state sums from downsets and augmented antichains.
inline void fill_sums(const models::Profile& p, const Dag& g, CutStates& s,
                      const std::vector<std::vector<int>>& augmented) {
  const int S = static_cast<int>(s.members.size());
  s.compute_ns.assign(S, 0);
  s.activation_bytes.assign(S, 0);
  s.stash_bytes.assign(S, 0);
  s.parameter_bytes.assign(S, 0);
  s.out_bytes.assign(S, 0);
  for (int k = 0; k < S; ++k) {
    for (int v = 0; v < g.n; ++v)
      if (s.members[k].test(v)) {
        const auto& l = p.layers[v];
        s.compute_ns[k] += l.compute_ns();
        s.activation_bytes[k] += l.output_bytes;
        s.stash_bytes[k] += l.stash_bytes;
        s.parameter_bytes[k] += l.parameter_bytes;
      }
    for (int v : augmented[k]) s.out_bytes[k] += p.layers[v].output_bytes;
  }
  s.cut_bytes.assign(S, 0);
  for (int k = 0; k < S; ++k)
    for (int v = 0; v < g.n; ++v) {
      if (!s.members[k].test(v) || p.layers[v].is_data_loading) continue;
      for (int w : g.out[v])
        if (!s.members[k].test(w)) {
          s.cut_bytes[k] += p.layers[v].output_bytes;
          break;
        }
    }
}

inline CutStates pipedream_states(const models::Profile& p, int max_states) {
  const std::vector<bool> kept = pipedream_kept_layers(p);
  Dag g = build_dag(p, kept);
  CutStates s;
  s.family = "pipedream-antichains";
  for (int v = 0; v < g.n; ++v)
    if (kept[v]) s.layers.push_back(v);
  if (s.layers.empty()) throw InputError("profile has no layer the PipeDream optimizer keeps");
  int source = -1;
  for (int v : s.layers)
    if (g.in[v].empty()) {
      source = v;  // sources()[0]: the first source in file order; ours is profile order
      break;
    }
  std::map<std::vector<int>, int> id;
  std::vector<std::vector<int>> antichains, augmented;
  std::vector<std::vector<int>> succ;  // state DAG edges
  auto intern = [&](const std::vector<int>& a) {
    auto [it, fresh] = id.emplace(a, static_cast<int>(antichains.size()));
    if (fresh) {
      antichains.push_back(a);
      augmented.push_back(augment(g, a));
      succ.emplace_back();
    }
    return it->second;
  };
  intern({source});
  std::deque<int> queue{0};
  std::vector<bool> expanded(1, false);
  while (!queue.empty()) {
    int cur = queue.front();
    queue.pop_front();
    if (cur < static_cast<int>(expanded.size()) && expanded[cur]) continue;
    if (static_cast<int>(expanded.size()) <= cur) expanded.resize(cur + 1, false);
    expanded[cur] = true;
    const std::vector<int> aug = augmented[cur];
    const std::vector<int> anti = antichains[cur];
    Bitset aug_set(g.n);
    for (int x : aug) aug_set.set(x);
    for (size_t xi = 0; xi < aug.size(); ++xi) {
      for (int y : g.out[aug[xi]]) {
        if (std::find(anti.begin(), anti.end(), y) != anti.end()) continue;
        if (g.desc[y].intersects(aug_set)) continue;
        std::vector<int> next = aug;
        next[xi] = y;
        int nid = intern(deaugment(g, next));
        if (static_cast<int>(antichains.size()) > max_states) {
          s.complete = false;
          return s;
        }
        succ[cur].push_back(nid);
        queue.push_back(nid);
      }
    }
  }
  const int S = static_cast<int>(antichains.size());
  std::vector<Bitset> down(S, Bitset(g.n));
  std::vector<int> size(S, 0);
  for (int k = 0; k < S; ++k) {
    for (int x : augmented[k]) {
      down[k].set(x);
      down[k].or_with(g.anc[x]);
    }
    for (uint64_t w : down[k].words()) size[k] += __builtin_popcountll(w);
  }
  // Every state edge strictly grows the downset, so ordering by size is topological.
  std::vector<int> order(S);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return size[a] < size[b]; });
  std::vector<int> rank(S);
  for (int k = 0; k < S; ++k) rank[order[k]] = k;
  std::vector<std::vector<int>> aug_sorted(S);
  s.members.resize(S);
  for (int k = 0; k < S; ++k) {
    s.members[k] = down[order[k]];
    aug_sorted[k] = augmented[order[k]];
  }
  s.pred_set.assign(S, Bitset(S));
  for (int k = 0; k < S; ++k) {  // in topological order: pred(next) |= pred(k) + k
    int old = order[k];
    for (int nx : succ[old]) {
      int r = rank[nx];
      s.pred_set[r].set(k);
      s.pred_set[r].or_with(s.pred_set[k]);
    }
  }
  s.preds.assign(S, {});
  for (int j = 0; j < S; ++j)
    for (int k = 0; k < j; ++k)
      if (s.pred_set[j].test(k)) s.preds[j].push_back(k);
  fill_sums(p, g, s, aug_sorted);
  return s;
}

inline CutStates prefix_states(const models::Profile& p, bool pipedream_drops) {
  std::vector<bool> kept = pipedream_drops ? pipedream_kept_layers(p) : std::vector<bool>(p.layers.size(), true);
  Dag g = build_dag(p, kept);
  CutStates s;
  s.family = "topological-prefixes";
  for (int v = 0; v < g.n; ++v)
    if (kept[v]) s.layers.push_back(v);
  const int S = static_cast<int>(s.layers.size());
  if (S == 0) throw InputError("profile has no layer to partition");
  Bitset cur(g.n);
  std::vector<std::vector<int>> augmented(S);
  for (int k = 0; k < S; ++k) {
    cur.set(s.layers[k]);
    s.members.push_back(cur);
    std::vector<int> maximal;
    for (int q = 0; q <= k; ++q) {
      int v = s.layers[q];
      bool has_succ_inside = false;
      for (int w : g.out[v])
        if (cur.test(w)) {
          has_succ_inside = true;
          break;
        }
      if (!has_succ_inside) maximal.push_back(v);
    }
    augmented[k] = augment(g, maximal);
  }
  s.preds.assign(S, {});
  s.pred_set.assign(S, Bitset(S));
  for (int j = 0; j < S; ++j)
    for (int k = 0; k < j; ++k) {
      s.preds[j].push_back(k);
      s.pred_set[j].set(k);
    }
  fill_sums(p, g, s, augmented);
  return s;
}

}  // namespace pw::test::reference
