// Planning time over PipeDream's own reference runs: for every run in
// pipedream-profiles/_reference_runs/ (its exact -n/-b/flags, read from run.log's CMD line),
// plans the same problem with `--objective pipedream` in this process and compares the summed
// process CPU time with the summed USER time /usr/bin/time recorded for PipeDream's optimizer
// (its whole Python process: interpreter start, graph read, antichain enumeration, DP; the
// runs also record WALL and SYS). Ours per run = graph import + make_plan (cut states, DP, plan),
// the median of `reps` repetitions of CLOCK_PROCESS_CPUTIME_ID, so worker threads count too.
// Runs that did not finish (no "USER=" line) are listed and left out of both sums.
//
// Usage: pw_bench_reference [reps=5] [run]   (prints a table and the totals; exit 0; `run`: only
// the runs whose name contains it, e.g. for profiling one of them under callgrind)
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/cluster.h"
#include "models/pipedream_import.h"
#include "planner/planner.h"
#include "tests/planner/pipedream_reference.h"

using namespace pw;

namespace {

const std::string kDir = std::string(PW_PIPEDREAM_DIR);

double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

// The "USER=<s> s" figure of run.log's /usr/bin/time line; -1 when absent.
double recorded_user_s(const std::string& run) {
  std::ifstream in(kDir + "/_reference_runs/" + run + "/run.log");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find("USER=");
    if (line.rfind("WALL=", 0) == 0 && a != std::string::npos) return std::stod(line.substr(a + 5));
  }
  return -1;
}

planner::PlanOutcome plan_like(const ReferenceRun& r, const models::Profile& p) {
  models::DeviceSpec dev;
  dev.name = "gpu";
  dev.memory_bytes = int64_t{16} << 30;
  std::vector<models::Level> lv;
  for (size_t k = 0; k < r.machines.size(); ++k)
    lv.push_back({"l" + std::to_string(k), r.machines[k], r.bandwidths[k], 0});
  planner::PlanRequest req;
  req.objective = pw::planner::Objective::pipedream;
  req.activation_comm = r.comm;
  req.straight = r.straight;
  req.fewer_devices = r.fewer;
  req.memory_limit_bytes = r.memory ? static_cast<int64_t>(r.memory_size) : 0;
  return planner::make_plan(p, models::Cluster("reference", dev, lv), req);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::vector<std::string> runs;
  const std::string only = argc > 2 ? argv[2] : "";
  for (const auto& e : std::filesystem::directory_iterator(kDir + "/_reference_runs"))
    if (e.path().filename().string().find(only) != std::string::npos) runs.push_back(e.path().filename().string());
  std::sort(runs.begin(), runs.end());
  double sum_theirs = 0, sum_ours = 0;
  int counted = 0;
  std::printf("%-24s %12s %12s %10s %s\n", "run", "pipedream_s", "ours_ms", "ratio", "bottleneck_s (ours / pipedream)");
  for (const std::string& run : runs) {
    const ReferenceRun r = read_reference_run(kDir + "/_reference_runs", run);
    const double theirs = recorded_user_s(run);
    std::vector<double> times;
    double bottleneck = -1;
    for (int q = 0; q < reps; ++q) {
      const double t0 = cpu_s();
      const models::Profile p = models::import_pipedream_graph(kDir + "/" + r.graph);
      const planner::PlanOutcome out = plan_like(r, p);
      times.push_back(cpu_s() - t0);
      bottleneck = out.feasible ? out.plan.predicted.bottleneck_time_s : -1;
    }
    std::sort(times.begin(), times.end());
    const double ours = times[times.size() / 2];
    if (theirs < 0) {
      std::printf("%-24s %12s %12.3f %10s (PipeDream's run did not finish: no USER time)\n", run.c_str(), "-",
                  ours * 1e3, "-");
      continue;
    }
    sum_theirs += theirs;
    sum_ours += ours;
    ++counted;
    std::printf("%-24s %12.2f %12.3f %10.0f %.10g / %.10g\n", run.c_str(), theirs, ours * 1e3, theirs / ours,
                bottleneck, r.time_per_stage);
  }
  std::printf("total over %d runs: pipedream %.2f s (USER), ours %.3f ms (process CPU, median of %d) -> %.0fx\n",
              counted, sum_theirs, sum_ours * 1e3, reps, sum_theirs / sum_ours);
  return 0;
}
