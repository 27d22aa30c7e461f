// Cut states: the family of downward-closed layer sets ("prefixes" of the DAG) at which the
// replicated (PipeDream-style) partitioners may cut. A stage is the set difference of two
// states D_k ⊂ D_j.
//
// Two families:
// - pipedream_states(): PipeDream's antichain DAG (OPTIMIZER.md §1), reproduced exactly:
//   breadth-first from the first source, moving one augmented-antichain node to a successor,
//   de-augmenting, deduplicating by antichain. Input* sources and __getitem__ sinks are dropped
//   first as PipeDream does. out_bytes(s) = activation of the augmented antichain (PipeDream's
//   output_activation_size, quirks included). The enumeration stops with `complete = false`
//   once it exceeds `max_states` (Inception-v3 has 221564 states, the NASNets more).
// - prefix_states(): the prefixes of the profile's topological order (layer 0..s), n states,
//   every earlier state a predecessor; out_bytes uses the same augmented-antichain rule so that
//   it can stand in for the PipeDream family on branchy graphs.
//
// Cost: the PipeDream enumeration is O(S * w * deg * n/64) for S states of antichain width w;
// prefixes are O(n * deg). Memory: S*S/8 bytes for the predecessor bitsets plus S*n/8 for the
// member bitsets. Not thread-safe to share while building; the result is immutable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/profile.h"

namespace pw::planner {

class Bitset {
 public:
  Bitset() = default;
  explicit Bitset(int n) : words_((n + 63) / 64, 0) {}
  void set(int i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  bool test(int i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  void or_with(const Bitset& o) {
    for (size_t k = 0; k < words_.size(); ++k) words_[k] |= o.words_[k];
  }
  bool intersects(const Bitset& o) const {
    for (size_t k = 0; k < words_.size(); ++k)
      if (words_[k] & o.words_[k]) return true;
    return false;
  }
  bool operator==(const Bitset& o) const { return words_ == o.words_; }
  const std::vector<uint64_t>& words() const { return words_; }
  uint64_t* data() { return words_.data(); }  // (n + 63) / 64 words, bit i of word i / 64
  const uint64_t* data() const { return words_.data(); }

 private:
  std::vector<uint64_t> words_;
};

struct CutStates {
  std::string family;       // "pipedream-antichains" or "topological-prefixes"
  bool complete = true;     // false: enumeration hit max_states (states are unusable)
  std::vector<int> layers;  // profile layer indices the states range over (kept layers)
  int num_states() const { return static_cast<int>(compute_ns.size()); }
  // Per state, sums over its downset (profile units: ns and bytes).
  std::vector<int64_t> compute_ns;        // forward + backward, data-loading sources count 0
  std::vector<int64_t> activation_bytes;  // output bytes (PipeDream's activation_size)
  std::vector<int64_t> stash_bytes;
  std::vector<int64_t> parameter_bytes;
  std::vector<int64_t> out_bytes;       // augmented antichain activation (tensors live across the cut)
  std::vector<int64_t> cut_bytes;       // exact: outputs of members with a consumer outside the downset
  std::vector<Bitset> members;          // downset, over profile layer indices
  std::vector<std::vector<int>> preds;  // strict predecessor states (in the state DAG), ascending
  std::vector<Bitset> pred_set;         // same, as bitsets over states
};

CutStates pipedream_states(const models::Profile& p, int max_states);
CutStates prefix_states(const models::Profile& p, bool pipedream_drops);

// The prefix states after which a stage may begin (models::stage_starts_allowed at the next
// kept layer; the last state always): the prefix family restricted to the allowed cuts, its
// sums unchanged, every earlier kept state a predecessor. `s` must be a prefix_states result.
CutStates prefix_states_at_allowed_starts(const CutStates& s, const models::Profile& p);

// Layers PipeDream's optimizer keeps: not an Input* data-loading source, not a __getitem__ sink.
std::vector<bool> pipedream_kept_layers(const models::Profile& p);

}  // namespace pw::planner
