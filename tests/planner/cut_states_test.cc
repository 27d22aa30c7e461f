// planner/cut_states: the flat-bitset enumeration equals the straightforward reference
// (tests/planner/cut_states_reference.h) field for field: on every shared PipeDream graph, on
// random DAGs (several sources and sinks, data-loading inputs, __getitem__ sinks), and in where
// a max_states limit stops it.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>

#include "models/pipedream_import.h"
#include "planner/cut_states.h"
#include "tests/planner/cut_states_reference.h"

using namespace pw;
using planner::CutStates;

namespace {

const std::string kCutStateGraphs = std::string(PW_PIPEDREAM_DIR);

void check_equal(const CutStates& a, const CutStates& b) {
  CHECK(a.family == b.family);
  REQUIRE(a.complete == b.complete);
  CHECK(a.layers == b.layers);
  if (!a.complete) return;  // an incomplete enumeration carries no states
  REQUIRE(a.num_states() == b.num_states());
  CHECK(a.compute_ns == b.compute_ns);
  CHECK(a.activation_bytes == b.activation_bytes);
  CHECK(a.stash_bytes == b.stash_bytes);
  CHECK(a.parameter_bytes == b.parameter_bytes);
  CHECK(a.out_bytes == b.out_bytes);
  CHECK(a.cut_bytes == b.cut_bytes);
  CHECK(a.preds == b.preds);
  bool members = true, pred_set = true;
  for (int k = 0; k < a.num_states(); ++k) {
    members = members && a.members[k] == b.members[k];
    pred_set = pred_set && a.pred_set[k] == b.pred_set[k];
  }
  CHECK(members);
  CHECK(pred_set);
}

// A DAG in topological order: each layer after the first few sources takes 1-3 random earlier
// producers; some sources are Input data loaders, some sinks __getitem__ tuple reads.
models::Profile random_dag(std::mt19937& rng, int n) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  models::Profile p;
  p.model = "random-dag";
  p.source = "analytic";
  const int sources = pick(1, 3);
  for (int i = 0; i < n; ++i) {
    models::LayerProfile l;
    l.name = "L" + std::to_string(i);
    l.kind = i < sources && pick(0, 1) ? "Input" : "op";
    l.is_data_loading = l.kind == "Input";
    l.forward_ns = pick(0, 9) * 1000;
    l.backward_input_ns = pick(0, 9) * 1000;
    l.output_bytes = pick(0, 99);
    l.stash_bytes = pick(0, 99);
    l.parameter_bytes = pick(0, 9);
    p.layers.push_back(l);
  }
  for (int j = sources; j < n; ++j) {
    const int fan_in = pick(1, 3);
    std::vector<int> from;
    for (int q = 0; q < fan_in; ++q) {
      const int i = pick(std::max(0, j - 6), j - 1);
      if (std::find(from.begin(), from.end(), i) == from.end()) from.push_back(i);
    }
    std::sort(from.begin(), from.end());
    for (int i : from) p.edges.push_back({i, j});
  }
  std::vector<int> out(n, 0);
  for (const auto& e : p.edges) ++out[e.from];
  for (int v = sources; v < n; ++v)
    if (out[v] == 0 && pick(0, 2) == 0) p.layers[v].kind = "__getitem__(0)";
  return p;
}

}  // namespace

TEST_CASE("cut states: equal to the reference enumeration on every shared PipeDream graph") {
  int graphs = 0, complete = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kCutStateGraphs)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.rfind("graph", 0) != 0 || e.path().extension() != ".txt") continue;
    CAPTURE(e.path().string());
    const models::Profile p = models::import_pipedream_graph(e.path().string());
    const CutStates fast = planner::pipedream_states(p, 5000);
    check_equal(fast, test::reference::pipedream_states(p, 5000));
    complete += fast.complete;
    for (bool drops : {true, false})
      check_equal(planner::prefix_states(p, drops), test::reference::prefix_states(p, drops));
    ++graphs;
  }
  CHECK(graphs == 18);
  CHECK(complete == 13);  // inception_v3 raw and the four NASNet graphs exceed 5000 states
}

TEST_CASE("cut states: equal to the reference on random DAGs, and stop at the same max_states") {
  std::mt19937 rng(20261124);
  int incomplete = 0, thrown = 0, complete = 0;
  for (int t = 0; t < 300; ++t) {
    const int n = std::uniform_int_distribution<int>(2, t < 200 ? 24 : 90)(rng);
    const models::Profile p = random_dag(rng, n);
    CAPTURE(t);
    CAPTURE(n);
    std::string ref_error;  // e.g. every layer an Input source: both throw the same
    try {
      test::reference::pipedream_states(p, 3000);
    } catch (const InputError& e) { ref_error = e.what(); }
    if (!ref_error.empty()) {
      CHECK_THROWS_WITH_AS(planner::pipedream_states(p, 3000), ref_error.c_str(), InputError);
      ++thrown;
      continue;
    }
    for (bool drops : {true, false})
      check_equal(planner::prefix_states(p, drops), test::reference::prefix_states(p, drops));
    // Wide random DAGs have very many antichains: 3000 bounds the reference's S^2 bitsets.
    const CutStates full = planner::pipedream_states(p, 3000);
    check_equal(full, test::reference::pipedream_states(p, 3000));
    if (!full.complete || full.num_states() < 2) continue;
    ++complete;
    // A limit below the state count stops both at the same point (complete = false).
    const int limit = full.num_states() / 2;
    const CutStates cut = planner::pipedream_states(p, limit);
    check_equal(cut, test::reference::pipedream_states(p, limit));
    incomplete += !cut.complete;
  }
  CHECK(complete > 200);  // 226 with libstdc++'s distributions
  CHECK(incomplete == complete);
  CHECK(thrown < 10);
}
