// Planner speed: make_plan (the whole `pipewright plan` work after loading) on every shared
// PipeDream profile for the sync, async and pipedream objectives on 16 flat devices and 4x4,
// and a 1,024-layer synthetic model on 1,024 flat devices and on 128x8 (sync objective; the
// replicated DP is O(n^2 M^2) there and not benchmarked); "scale/..." runs the pipedream and
// async objectives on 4x4, 8x8, 16x4 and 8x8x4 (levels innermost first as `--levels` takes
// them: 16x4 = 4 groups of 16 devices). Counters: stages of the plan, peak resident memory
// of the process (MiB, getrusage).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "models/cluster.h"
#include "models/pipedream_import.h"
#include "planner/planner.h"
#include "tests/planner/pipedream_graphs.h"

using namespace pw;

namespace {

const std::string kDir = std::string(PW_PIPEDREAM_DIR) + "/";

double max_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

models::Cluster cluster(const std::vector<int>& counts) {
  models::DeviceSpec dev;
  dev.name = "gpu";
  dev.memory_bytes = int64_t{16} << 30;
  std::vector<models::Level> lv;
  const double bw[] = {1.25e10, 1.25e9, 1.25e8};
  for (size_t k = 0; k < counts.size(); ++k) lv.push_back({"l" + std::to_string(k), counts[k], bw[k], 0});
  return models::Cluster("bench", dev, lv);
}

// 1,024 layers: a chain with a skip every 8 layers over 4, deterministic uneven costs,
// profiled at 8 samples (auto micro-batch counts 1, 2, 4, 8).
models::Profile synthetic(int n) {
  models::Profile p;
  p.model = "synthetic";
  p.source = "analytic";
  p.micro_batch = 8;
  uint64_t x = 12345;
  auto next = [&] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % 1000);
  };
  for (int i = 0; i < n; ++i) {
    models::LayerProfile l;
    l.name = "layer" + std::to_string(i);
    l.kind = "linear";
    l.forward_ns = 100000 + 1000 * next();
    l.backward_input_ns = 100000 + 1000 * next();
    l.backward_weight_ns = 50000 + 500 * next();
    l.output_bytes = (1 << 20) + 1024 * next();
    l.stash_bytes = 2 * l.output_bytes;
    l.parameter_bytes = (4 << 20) + 4096 * next();
    p.layers.push_back(l);
    if (i > 0) p.edges.push_back({i - 1, i});
    if (i % 8 == 0 && i + 4 < n) p.edges.push_back({i, i + 4});
  }
  return p;
}

void plan(benchmark::State& state, const models::Profile& p, const models::Cluster& c, const std::string& objective) {
  planner::PlanRequest req;
  req.objective = planner::parse_objective(objective, "objective");
  if (objective == "pipedream") req.activation_comm = true;
  int stages = 0;
  double iteration_s = 0;
  for (auto _ : state) {
    planner::PlanOutcome out = planner::make_plan(p, c, req);
    if (!out.feasible) {
      state.SkipWithError("infeasible");
      return;
    }
    stages = out.plan.num_stages();
    iteration_s = out.plan.predicted.iteration_time_s;
    benchmark::DoNotOptimize(out.plan.predicted.iteration_time_s);
  }
  state.counters["stages"] = stages;
  state.counters["iteration_s"] = iteration_s;  // the plan's value: equal before and after a speed-up
  state.counters["max_rss_MiB"] = max_rss_mib();
}

}  // namespace

int main(int argc, char** argv) {
  for (const std::string f : test::kPipeDreamGraphs) {
    auto prof = std::make_shared<models::Profile>(models::import_pipedream_graph(kDir + f));
    for (const char* obj : {"sync", "async", "pipedream"})
      for (const auto& topo : std::vector<std::vector<int>>{{16}, {4, 4}}) {
        const std::string name = "plan/" + f + "/" + obj + "/" + (topo.size() == 1 ? "16" : "4x4");
        benchmark::RegisterBenchmark(name.c_str(),
                                     [prof, obj, topo](benchmark::State& st) { plan(st, *prof, cluster(topo), obj); })
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.05);
      }
  }
  // Hierarchical replicated DP at scale: every profile on 4x4, 8x8, 16x4 and 8x8x4,
  // one timed run each (the slow cases took seconds before); process CPU time counts the DP's
  // worker threads too.
  for (const std::string f : test::kPipeDreamGraphs) {
    auto prof = std::make_shared<models::Profile>(models::import_pipedream_graph(kDir + f));
    for (const char* obj : {"pipedream", "async"})
      for (const auto& topo : std::vector<std::vector<int>>{{4, 4}, {8, 8}, {16, 4}, {8, 8, 4}}) {
        std::string t;
        for (size_t k = 0; k < topo.size(); ++k) t += (k ? "x" : "") + std::to_string(topo[k]);
        const std::string name = "scale/" + f + "/" + obj + "/" + t;
        benchmark::RegisterBenchmark(name.c_str(),
                                     [prof, obj, topo](benchmark::State& st) { plan(st, *prof, cluster(topo), obj); })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1)
            ->MeasureProcessCPUTime()
            ->UseRealTime();
      }
  }
  auto syn = std::make_shared<models::Profile>(synthetic(1024));
  for (const char* obj : {"sync"})
    for (const auto& topo : std::vector<std::vector<int>>{{1024}, {8, 128}}) {
      const std::string name = std::string("plan/synthetic1024/") + obj + "/" + (topo.size() == 1 ? "1024" : "128x8");
      benchmark::RegisterBenchmark(name.c_str(),
                                   [syn, obj, topo](benchmark::State& st) { plan(st, *syn, cluster(topo), obj); })
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.05);
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
