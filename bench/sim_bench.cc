// Simulator speed: simulated ops per second (one core, trace off unless said).
#include <benchmark/benchmark.h>

#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"
#include "sim/engine.h"

using namespace pw;

namespace {

void run(benchmark::State& state, planner::ScheduleKind kind, bool trace) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const planner::Schedule s = planner::make_schedule(kind, p, m);
  sim::StageCosts c = sim::StageCosts::uniform(p, 1000, 1500, 700);
  c.stash_bytes_per_micro_batch.assign(p, 1 << 20);
  const sim::Network net = sim::Network::fixed(100);
  sim::SimOptions o;
  o.record_trace = trace;
  o.validate = false;
  for (auto _ : state) {
    sim::SimResult r = sim::simulate(s, c, net, o);
    benchmark::DoNotOptimize(r.report.makespan_ns);
  }
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(s.num_ops()) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_Simulate1F1B(benchmark::State& st) { run(st, planner::ScheduleKind::one_f_one_b, false); }
void BM_Simulate1F1BTrace(benchmark::State& st) { run(st, planner::ScheduleKind::one_f_one_b, true); }
void BM_SimulateZBH2(benchmark::State& st) { run(st, planner::ScheduleKind::zb_h2, false); }

void BM_Validate1F1B(benchmark::State& state) {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 64, 1024);
  for (auto _ : state) planner::validate_schedule(s);
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(s.num_ops()) * state.iterations(), benchmark::Counter::kIsRate);
}

// Generation + validation + simulation of the largest acceptance case.
void BM_Large1F1B(benchmark::State& state) {
  for (auto _ : state) {
    const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 1000, 10000);
    sim::SimResult r = sim::simulate(s, sim::StageCosts::uniform(1000, 1000, 1500, 700), sim::Network::fixed(100));
    benchmark::DoNotOptimize(r.report.makespan_ns);
    state.counters["ops"] = static_cast<double>(s.num_ops());
  }
}

}  // namespace

BENCHMARK(BM_Simulate1F1B)->Args({64, 1024})->Args({8, 64})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Simulate1F1BTrace)->Args({64, 1024})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateZBH2)->Args({64, 1024})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Validate1F1B)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Large1F1B)->Iterations(1)->Unit(benchmark::kSecond);

BENCHMARK_MAIN();
