// trim_trace: the last K iterations in full, one summary per iteration; its Chrome trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "planner/schedule_gen.h"
#include "sim/engine.h"
#include "sim/trace_trim.h"

using namespace pw;

namespace {

// 2 stages, 4 micro-batches of 1F1B, `n` iterations with transfers and memory samples.
sim::Trace simulated(int n) {
  sim::StageCosts c = sim::StageCosts::uniform(2, 1000, 2000, 500);
  c.stash_bytes_per_micro_batch.assign(2, 10);
  c.activation_bytes.assign(2, 4096);
  c.gradient_bytes.assign(2, 4096);
  sim::SimOptions o;
  o.iterations = n;
  o.record_trace = true;
  return sim::simulate(planner::make_schedule(planner::ScheduleKind::one_f_one_b, 2, 4), c, sim::Network::fixed(250), o)
      .trace;
}

bool same(const sim::TraceEvent& a, const sim::TraceEvent& b) {
  return a.device == b.device && a.kind == b.kind && a.stage == b.stage && a.micro_batch == b.micro_batch &&
         a.iteration == b.iteration && a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.bytes == b.bytes &&
         a.is_transfer == b.is_transfer && a.dst_device == b.dst_device;
}

}  // namespace

TEST_CASE("trim_trace keeps the last K iterations event for event and summarizes all N") {
  const int N = 7, K = 3;
  const sim::Trace full = simulated(N);
  const sim::TrimmedTrace t = sim::trim_trace(full, K);
  CHECK(t.kept_iterations == K);
  // Exactly the events of iterations N-K.. N-1, in their order, unchanged.
  std::vector<sim::TraceEvent> expect;
  for (const auto& e : full.events)
    if (e.iteration >= N - K) expect.push_back(e);
  REQUIRE(t.trace.events.size() == expect.size());
  for (size_t i = 0; i < expect.size(); ++i) CHECK(same(t.trace.events[i], expect[i]));
  // 1F1B with 2 stages and 4 micro-batches: per iteration 8 F/B on stage ops, 1 step per
  // device, and 4 + 4 transfers (activations down, gradients up).
  std::map<int, int> per_iteration;
  for (const auto& e : t.trace.events) ++per_iteration[e.iteration];
  CHECK(per_iteration.size() == K);
  for (const auto& [k, count] : per_iteration) CHECK(count == 8 * 2 + 2 + 8);
  // One summary per iteration: the extent of its compute events.
  REQUIRE(t.iterations.size() == N);
  for (int k = 0; k < N; ++k) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& e : full.events)
      if (!e.is_transfer && e.iteration == k) lo = std::min(lo, e.start_ns), hi = std::max(hi, e.end_ns);
    CHECK(t.iterations[k].iteration == k);
    CHECK(t.iterations[k].start_ns == lo);
    CHECK(t.iterations[k].end_ns == hi);
  }
  // Memory: from the first kept event on, plus one earlier sample per device.
  int64_t cut = INT64_MAX;
  for (const auto& e : expect) cut = std::min(cut, e.start_ns);
  std::map<int, int> early;
  for (const auto& m : t.trace.memory)
    if (m.time_ns < cut) ++early[m.device];
  CHECK(early.size() == 2);
  for (const auto& [d, count] : early) CHECK(count == 1);
  size_t later = 0;
  for (const auto& m : full.memory) later += m.time_ns >= cut;
  CHECK(t.trace.memory.size() == later + 2);
}

TEST_CASE("trim_trace with K >= N keeps the whole trace") {
  const sim::Trace full = simulated(3);
  const sim::TrimmedTrace t = sim::trim_trace(full, 3);
  CHECK(t.kept_iterations == 3);
  CHECK(t.trace.events.size() == full.events.size());
  CHECK(t.trace.memory.size() == full.memory.size());
  CHECK(sim::trim_trace(full, 100).trace.events.size() == full.events.size());
}

TEST_CASE("chrome trace of a trimmed trace: K iterations of ops, N iteration summaries on their own process") {
  const int N = 6, K = 2;
  const Json j = Json::parse(sim::chrome_trace_json(sim::trim_trace(simulated(N), K)).dump());
  CHECK(j.at("format") == "pipewright.chrome-trace/1");
  CHECK(j.at("otherData").at("iterations") == N);
  CHECK(j.at("otherData").at("kept_iterations") == K);
  std::set<int> op_iterations;
  std::vector<Json> summaries;
  for (const Json& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e.at("pid") == 0) op_iterations.insert(e.at("args").at("iteration").get<int>());
    if (e.at("pid") == 2) summaries.push_back(e);
  }
  CHECK(op_iterations == std::set<int>{N - 2, N - 1});
  REQUIRE(summaries.size() == N);
  for (int k = 0; k < N; ++k) {
    const Json& a = summaries[k].at("args");
    CHECK(summaries[k].at("name") == "iteration " + std::to_string(k));
    CHECK(a.at("iteration") == k);
    CHECK(a.at("duration_ns").get<int64_t>() == a.at("end_ns").get<int64_t>() - a.at("start_ns").get<int64_t>());
    CHECK(a.at("duration_ns").get<int64_t>() > 0);
  }
}
