#include "planner/cut_states.h"

#include <algorithm>
#include <numeric>

#include "models/error.h"

namespace pw::planner {
namespace {

// Rows of equal-width bitsets in one allocation.
class BitRows {
 public:
  BitRows() = default;
  BitRows(int rows, int bits) : words_((bits + 63) / 64), data_(static_cast<size_t>(rows) * words_, 0) {}
  int words() const { return words_; }
  uint64_t* row(int r) { return data_.data() + static_cast<size_t>(r) * words_; }
  const uint64_t* row(int r) const { return data_.data() + static_cast<size_t>(r) * words_; }

 private:
  int words_ = 0;
  std::vector<uint64_t> data_;
};

bool test_bit(const uint64_t* b, int i) { return (b[i >> 6] >> (i & 63)) & 1; }
void set_bit(uint64_t* b, int i) { b[i >> 6] |= uint64_t{1} << (i & 63); }
bool any_common(const uint64_t* a, const uint64_t* b, int words) {
  for (int k = 0; k < words; ++k)
    if (a[k] & b[k]) return true;
  return false;
}
// Calls f(i) for every set bit i, ascending.
template <class F>
void for_each_bit(const uint64_t* b, int words, F&& f) {
  for (int k = 0; k < words; ++k)
    for (uint64_t w = b[k]; w; w &= w - 1) f(k * 64 + __builtin_ctzll(w));
}

// The kept layers' graph: edges among kept layers in the profile's edge order (CSR), strict
// transitive ancestors and descendants, and direct successors as bitsets.
struct Dag {
  int n = 0, words = 0;
  std::vector<int> out_begin, out;  // out[out_begin[v] .. out_begin[v + 1])
  std::vector<int> in_count;
  BitRows anc, desc, succ;
  const int* out_of(int v) const { return out.data() + out_begin[v]; }
  const int* out_end(int v) const { return out.data() + out_begin[v + 1]; }
};

Dag build_dag(const models::Profile& p, const std::vector<bool>& kept) {
  Dag g;
  g.n = static_cast<int>(p.layers.size());
  g.words = (g.n + 63) / 64;
  g.out_begin.assign(g.n + 1, 0);
  g.in_count.assign(g.n, 0);
  std::vector<int> in_begin(g.n + 1, 0);
  for (const auto& e : p.edges)
    if (kept[e.from] && kept[e.to]) {
      ++g.out_begin[e.from + 1];
      ++in_begin[e.to + 1];
      ++g.in_count[e.to];
    }
  for (int v = 0; v < g.n; ++v) {
    g.out_begin[v + 1] += g.out_begin[v];
    in_begin[v + 1] += in_begin[v];
  }
  g.out.resize(g.out_begin[g.n]);
  std::vector<int> in(in_begin[g.n]);
  std::vector<int> fo(g.out_begin.begin(), g.out_begin.end() - 1), fi(in_begin.begin(), in_begin.end() - 1);
  for (const auto& e : p.edges)
    if (kept[e.from] && kept[e.to]) {
      g.out[fo[e.from]++] = e.to;
      in[fi[e.to]++] = e.from;
    }
  g.anc = BitRows(g.n, g.n);
  g.desc = BitRows(g.n, g.n);
  g.succ = BitRows(g.n, g.n);
  const int W = g.words;
  for (int v = 0; v < g.n; ++v) {  // profile order is topological
    uint64_t* a = g.anc.row(v);
    for (int q = in_begin[v]; q < in_begin[v + 1]; ++q) {
      const int u = in[q];
      set_bit(a, u);
      const uint64_t* au = g.anc.row(u);
      for (int k = 0; k < W; ++k) a[k] |= au[k];
    }
  }
  for (int v = g.n - 1; v >= 0; --v) {
    uint64_t* d = g.desc.row(v);
    for (const int* w = g.out_of(v); w != g.out_end(v); ++w) {
      set_bit(d, *w);
      set_bit(g.succ.row(v), *w);
      const uint64_t* dw = g.desc.row(*w);
      for (int k = 0; k < W; ++k) d[k] |= dw[k];
    }
  }
  return g;
}

// PipeDream's augment_antichain, one antichain node at a time: the ancestors p of `a` with an
// out-edge to a node that is neither an ancestor of a nor a. augment(antichain) is the union of
// these over the antichain (ascending) followed by the antichain's nodes not in that union.
class Augmenter {
 public:
  explicit Augmenter(const Dag& g) : g_(g), extra_(g.n, g.n), done_(g.n, 0) {}

  // Appends augment(list) to `out` (list in the order the result lists them); `scratch` and
  // the return value are the union bitset (g.words words).
  void augment(const std::vector<int>& list, std::vector<uint64_t>& scratch, std::vector<int>& out) {
    const int W = g_.words;
    scratch.assign(W, 0);
    for (int a : list) {
      const uint64_t* e = extra_of(a);
      for (int k = 0; k < W; ++k) scratch[k] |= e[k];
    }
    for_each_bit(scratch.data(), W, [&](int p) { out.push_back(p); });
    for (int a : list)
      if (!test_bit(scratch.data(), a)) out.push_back(a);
  }

 private:
  const uint64_t* extra_of(int a) {
    uint64_t* e = extra_.row(a);
    if (done_[a]) return e;
    done_[a] = 1;
    const uint64_t* anc = g_.anc.row(a);
    for_each_bit(anc, g_.words, [&](int p) {
      for (const int* y = g_.out_of(p); y != g_.out_end(p); ++y)
        if (!test_bit(anc, *y) && *y != a) {
          set_bit(e, p);
          break;
        }
    });
    return e;
  }

  const Dag& g_;
  BitRows extra_;
  std::vector<char> done_;
};

// Fills the per-state sums from downsets and augmented antichains (aug[aug_begin[k] ..
// aug_begin[k + 1]) for state k).
void fill_sums(const models::Profile& p, const Dag& g, CutStates& s, const std::vector<int>& aug_begin,
               const std::vector<int>& aug) {
  const int S = static_cast<int>(s.members.size());
  const int W = g.words;
  s.compute_ns.assign(S, 0);
  s.activation_bytes.assign(S, 0);
  s.stash_bytes.assign(S, 0);
  s.parameter_bytes.assign(S, 0);
  s.out_bytes.assign(S, 0);
  s.cut_bytes.assign(S, 0);
  for (int k = 0; k < S; ++k) {
    const uint64_t* m = s.members[k].data();
    int64_t c = 0, a = 0, st = 0, par = 0, cut = 0;
    for_each_bit(m, W, [&](int v) {
      const auto& l = p.layers[v];
      c += l.compute_ns();
      a += l.output_bytes;
      st += l.stash_bytes;
      par += l.parameter_bytes;
      if (l.is_data_loading) return;
      const uint64_t* su = g.succ.row(v);
      for (int q = 0; q < W; ++q)
        if (su[q] & ~m[q]) {
          cut += l.output_bytes;
          break;
        }
    });
    s.compute_ns[k] = c;
    s.activation_bytes[k] = a;
    s.stash_bytes[k] = st;
    s.parameter_bytes[k] = par;
    s.cut_bytes[k] = cut;
    int64_t o = 0;
    for (int q = aug_begin[k]; q < aug_begin[k + 1]; ++q) o += p.layers[aug[q]].output_bytes;
    s.out_bytes[k] = o;
  }
}

// Open-addressing set of fixed-width bitsets (the antichains), ids in insertion order.
class BitsetIndex {
 public:
  explicit BitsetIndex(int words) : words_(words), slots_(64, -1) {}
  int size() const { return static_cast<int>(keys_.size() / words_); }
  const uint64_t* key(int id) const { return keys_.data() + static_cast<size_t>(id) * words_; }
  // The id of `b`, inserted with the next id when absent (`fresh` says which).
  int intern(const uint64_t* b, bool& fresh) {
    if (2 * (size() + 1) > static_cast<int>(slots_.size())) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t h = hash(b) & mask;; h = (h + 1) & mask) {
      const int id = slots_[h];
      if (id < 0) {
        fresh = true;
        slots_[h] = size();
        keys_.insert(keys_.end(), b, b + words_);
        return slots_[h];
      }
      if (std::equal(b, b + words_, key(id))) {
        fresh = false;
        return id;
      }
    }
  }

 private:
  size_t hash(const uint64_t* b) const {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < words_; ++k) {
      h ^= b[k];
      h *= 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    }
    return static_cast<size_t>(h);
  }
  void grow() {
    std::vector<int> old(slots_.size() * 2, -1);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (int id = 0; id < size(); ++id) {
      size_t h = hash(key(id)) & mask;
      while (slots_[h] >= 0) h = (h + 1) & mask;
      slots_[h] = id;
    }
  }

  int words_;
  std::vector<uint64_t> keys_;
  std::vector<int> slots_;
};

}  // namespace

std::vector<bool> pipedream_kept_layers(const models::Profile& p) {
  const int n = static_cast<int>(p.layers.size());
  std::vector<int> indeg(n, 0), outdeg(n, 0);
  for (const auto& e : p.edges) {
    ++indeg[e.to];
    ++outdeg[e.from];
  }
  std::vector<bool> kept(n, true);
  for (int v = 0; v < n; ++v) {
    const auto& l = p.layers[v];
    if (l.is_data_loading && indeg[v] == 0) kept[v] = false;
  }
  // PipeDream removes __getitem__ sinks after removing inputs (a sink then is out-degree 0).
  for (int v = 0; v < n; ++v)
    if (kept[v] && outdeg[v] == 0 && p.layers[v].kind.rfind("__getitem__", 0) == 0) kept[v] = false;
  return kept;
}

CutStates pipedream_states(const models::Profile& p, int max_states) {
  const std::vector<bool> kept = pipedream_kept_layers(p);
  const Dag g = build_dag(p, kept);
  const int W = g.words;
  CutStates s;
  s.family = "pipedream-antichains";
  for (int v = 0; v < g.n; ++v)
    if (kept[v]) s.layers.push_back(v);
  if (s.layers.empty()) throw InputError("profile has no layer the PipeDream optimizer keeps");
  int source = -1;
  for (int v : s.layers)
    if (g.in_count[v] == 0) {
      source = v;  // sources()[0]: the first source in file order; ours is profile order
      break;
    }
  // States are numbered as PipeDream's breadth-first search first meets them; a FIFO queue
  // expands each once in the order of its first push, which is that numbering, so state `cur`
  // is expanded at step cur. Antichains are keyed by their bitset (deaugment's output is sorted
  // and free of duplicates, so list and set correspond one to one).
  Augmenter augmenter(g);
  BitsetIndex index(W);
  std::vector<int> aug_begin{0}, aug;      // augmented antichains, flat
  std::vector<std::pair<int, int>> edges;  // state DAG edges (from, to)
  std::vector<uint64_t> scratch, next(W), kept_max(W);
  std::vector<int> anti;
  auto intern = [&](const uint64_t* bits) {
    bool fresh = false;
    const int id = index.intern(bits, fresh);
    if (fresh) {
      anti.clear();
      for_each_bit(bits, W, [&](int v) { anti.push_back(v); });
      augmenter.augment(anti, scratch, aug);
      aug_begin.push_back(static_cast<int>(aug.size()));
    }
    return id;
  };
  std::fill(next.begin(), next.end(), 0);
  set_bit(next.data(), source);
  intern(next.data());
  std::vector<uint64_t> aug_set(W);
  for (int cur = 0; cur < index.size(); ++cur) {
    std::fill(aug_set.begin(), aug_set.end(), 0);
    for (int q = aug_begin[cur]; q < aug_begin[cur + 1]; ++q) set_bit(aug_set.data(), aug[q]);
    for (int xi = aug_begin[cur]; xi < aug_begin[cur + 1]; ++xi) {
      const int x = aug[xi];
      for (const int* y = g.out_of(x); y != g.out_end(x); ++y) {
        if (test_bit(index.key(cur), *y)) continue;
        if (any_common(g.desc.row(*y), aug_set.data(), W)) continue;
        // The augmented list with x replaced by y, de-augmented: its nodes without a
        // descendant in it.
        next = aug_set;
        next[x >> 6] &= ~(uint64_t{1} << (x & 63));
        set_bit(next.data(), *y);
        std::fill(kept_max.begin(), kept_max.end(), 0);
        for_each_bit(next.data(), W, [&](int z) {
          if (!any_common(g.desc.row(z), next.data(), W)) set_bit(kept_max.data(), z);
        });
        const int nid = intern(kept_max.data());
        if (index.size() > max_states) {
          s.complete = false;
          return s;
        }
        edges.push_back({cur, nid});
      }
    }
  }
  const int S = index.size();
  BitRows down(S, g.n);
  std::vector<int> size(S, 0);
  for (int k = 0; k < S; ++k) {
    uint64_t* d = down.row(k);
    for (int q = aug_begin[k]; q < aug_begin[k + 1]; ++q) {
      const int x = aug[q];
      set_bit(d, x);
      const uint64_t* a = g.anc.row(x);
      for (int w = 0; w < W; ++w) d[w] |= a[w];
    }
    for (int w = 0; w < W; ++w) size[k] += __builtin_popcountll(d[w]);
  }
  // Every state edge strictly grows the downset, so ordering by size is topological.
  std::vector<int> order(S);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return size[a] < size[b]; });
  std::vector<int> rank(S);
  for (int k = 0; k < S; ++k) rank[order[k]] = k;
  std::vector<int> sorted_begin{0}, sorted_aug;
  sorted_aug.reserve(aug.size());
  s.members.assign(S, Bitset(g.n));
  for (int k = 0; k < S; ++k) {
    std::copy(down.row(order[k]), down.row(order[k]) + W, s.members[k].data());
    sorted_aug.insert(sorted_aug.end(), aug.begin() + aug_begin[order[k]], aug.begin() + aug_begin[order[k] + 1]);
    sorted_begin.push_back(static_cast<int>(sorted_aug.size()));
  }
  // In topological order: pred(next) |= pred(k) + k. Edges grouped by their source's rank.
  std::vector<int> by_rank_begin(S + 1, 0), by_rank(edges.size());
  for (const auto& e : edges) ++by_rank_begin[rank[e.first] + 1];
  for (int k = 0; k < S; ++k) by_rank_begin[k + 1] += by_rank_begin[k];
  {
    std::vector<int> fill(by_rank_begin.begin(), by_rank_begin.end() - 1);
    for (const auto& e : edges) by_rank[fill[rank[e.first]]++] = rank[e.second];
  }
  BitRows pred(S, S);
  const int PW = pred.words();
  for (int k = 0; k < S; ++k)
    for (int q = by_rank_begin[k]; q < by_rank_begin[k + 1]; ++q) {
      uint64_t* r = pred.row(by_rank[q]);
      set_bit(r, k);
      const uint64_t* pk = pred.row(k);
      for (int w = 0; w < PW; ++w) r[w] |= pk[w];
    }
  s.preds.assign(S, {});
  s.pred_set.assign(S, Bitset(S));
  for (int j = 0; j < S; ++j) {
    std::copy(pred.row(j), pred.row(j) + PW, s.pred_set[j].data());
    for_each_bit(pred.row(j), PW, [&](int k) { s.preds[j].push_back(k); });
  }
  fill_sums(p, g, s, sorted_begin, sorted_aug);
  return s;
}

CutStates prefix_states_at_allowed_starts(const CutStates& s, const models::Profile& p) {
  const std::vector<bool> ok = models::stage_starts_allowed(p);
  const int S = s.num_states();
  CutStates r;
  r.family = s.family;
  r.complete = s.complete;
  r.layers = s.layers;
  for (int k = 0; k < S; ++k) {
    if (k + 1 < S && !ok[s.layers[k + 1]]) continue;
    r.compute_ns.push_back(s.compute_ns[k]);
    r.activation_bytes.push_back(s.activation_bytes[k]);
    r.stash_bytes.push_back(s.stash_bytes[k]);
    r.parameter_bytes.push_back(s.parameter_bytes[k]);
    r.out_bytes.push_back(s.out_bytes[k]);
    r.cut_bytes.push_back(s.cut_bytes[k]);
    r.members.push_back(s.members[k]);
  }
  const int R = r.num_states();
  r.preds.assign(R, {});
  r.pred_set.assign(R, Bitset(R));
  for (int j = 0; j < R; ++j) {
    r.preds[j].resize(j);
    std::iota(r.preds[j].begin(), r.preds[j].end(), 0);
    for (int k = 0; k < j; ++k) r.pred_set[j].set(k);
  }
  return r;
}

CutStates prefix_states(const models::Profile& p, bool pipedream_drops) {
  std::vector<bool> kept = pipedream_drops ? pipedream_kept_layers(p) : std::vector<bool>(p.layers.size(), true);
  const Dag g = build_dag(p, kept);
  const int W = g.words;
  CutStates s;
  s.family = "topological-prefixes";
  for (int v = 0; v < g.n; ++v)
    if (kept[v]) s.layers.push_back(v);
  const int S = static_cast<int>(s.layers.size());
  if (S == 0) throw InputError("profile has no layer to partition");
  Augmenter augmenter(g);
  Bitset cur(g.n);
  std::vector<int> aug_begin{0}, aug, maximal;
  std::vector<uint64_t> scratch;
  s.members.reserve(S);
  for (int k = 0; k < S; ++k) {
    cur.set(s.layers[k]);
    s.members.push_back(cur);
    maximal.clear();  // the prefix's layers without a successor inside it, ascending
    for (int q = 0; q <= k; ++q) {
      const int v = s.layers[q];
      if (!any_common(g.succ.row(v), cur.data(), W)) maximal.push_back(v);
    }
    augmenter.augment(maximal, scratch, aug);
    aug_begin.push_back(static_cast<int>(aug.size()));
  }
  s.preds.assign(S, {});
  s.pred_set.assign(S, Bitset(S));
  for (int j = 0; j < S; ++j) {
    s.preds[j].resize(j);
    std::iota(s.preds[j].begin(), s.preds[j].end(), 0);
    for (int k = 0; k < j; ++k) s.pred_set[j].set(k);
  }
  fill_sums(p, g, s, aug_begin, aug);
  return s;
}

}  // namespace pw::planner
