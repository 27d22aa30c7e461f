#include <doctest/doctest.h>

#include <filesystem>
#include <iostream>

#include "models/pipedream_import.h"
#include "planner/cut_states.h"
#include "planner/replicated_dp.h"
#include "tests/planner/pipedream_reference.h"

using namespace pw::planner;

namespace {
const std::string kParityGraphs = std::string(PW_PIPEDREAM_DIR);
}

TEST_CASE("cut states: PipeDream's state counts on the shared profiles") {
  const std::pair<const char*, int> expected[] = {
      {"alexnet/graph.txt", 22},      {"vgg16/graph.txt", 40},
      {"resnet18/graph.txt", 100},    {"squeezenet1_0/graph.txt", 99},
      {"resnet50/graph.txt", 240},    {"gnmt/graph.txt", 99},
      {"densenet121/graph.txt", 430}, {"inception_v3/graph_compressed.txt", 1646},
  };
  for (auto [file, count] : expected) {
    CAPTURE(file);
    auto p = pw::models::import_pipedream_graph(kParityGraphs + "/" + file);
    CutStates s = pipedream_states(p, 100000);
    CHECK(s.complete);
    CHECK(s.num_states() == count);
    // The last state is the whole (kept) graph.
    CHECK(s.compute_ns.back() == p.total_forward_ns() + p.total_backward_ns());
  }
  auto inc = pw::models::import_pipedream_graph(kParityGraphs + "/inception_v3/graph.txt");
  CHECK_FALSE(pipedream_states(inc, 5000).complete);
}

TEST_CASE("pipedream parity: every reference run, bottleneck <= PipeDream's, plan re-evaluates") {
  int runs = 0, better = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kParityGraphs + "/_reference_runs")) {
    bool has_output = false;
    for (const auto& f : std::filesystem::directory_iterator(entry.path()))
      if (f.path().filename().string().rfind("gpus=", 0) == 0) has_output = true;
    if (!has_output) continue;
    ReferenceRun ref = read_reference_run(kParityGraphs + "/_reference_runs", entry.path().filename().string());
    CAPTURE(ref.name);
    REQUIRE(ref.time_per_stage > 0);
    auto p = pw::models::import_pipedream_graph(kParityGraphs + "/" + ref.graph);
    CutStates s = pipedream_states(p, 100000);
    REQUIRE(s.complete);
    std::vector<ReplicatedLevel> levels;
    for (size_t k = 0; k < ref.machines.size(); ++k) levels.push_back({ref.machines[k], ref.bandwidths[k], 0});
    ReplicatedOptions o;
    o.quirks = true;
    o.straight = ref.straight;
    o.fewer_machines = ref.fewer;
    o.activation_comm = ref.comm;
    o.use_memory_constraint = ref.memory;
    o.memory_bytes = ref.memory_size;
    ReplicatedResult r = replicated_partition(s, levels, o);
    REQUIRE(r.feasible);
    CHECK(r.bottleneck_s <= ref.time_per_stage * (1 + 1e-9));
    const double again = replicated_evaluate(s, levels, o, r.stages);
    CHECK(again == doctest::Approx(r.bottleneck_s).epsilon(1e-12));
    if (r.bottleneck_s < ref.time_per_stage * (1 - 1e-9)) ++better;
    ++runs;
    MESSAGE(ref.name << ": ours " << r.bottleneck_s << " pipedream " << ref.time_per_stage);
  }
  CHECK(runs == 32);
  MESSAGE("strictly better on " << better << " of " << runs << " runs");
}
