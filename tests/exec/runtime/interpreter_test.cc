#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "exec/runtime/pipeline_runtime.h"
#include "planner/schedule_gen.h"
#include "tests/exec/runtime/fake_compute.h"

using namespace pw;
using namespace pw::exec;
using exec::testing::FakeCompute;
using planner::Op;
using planner::OpKind;
using planner::ScheduleKind;

namespace {
RuntimeOptions test_options() {
  RuntimeOptions o;
  o.timeout = std::chrono::milliseconds(20000);
  return o;
}

// Expected per-stage call log of a device list (what the fake compute must have seen).
std::map<int, std::vector<std::string>> expected_logs(const planner::Schedule& s, int iterations) {
  std::map<int, std::vector<std::string>> out;
  for (int it = 0; it < iterations; ++it)
    for (int d = 0; d < s.num_devices; ++d)
      for (const Op& op : s.device_ops[d]) {
        const std::string mb = std::to_string(op.micro_batch);
        switch (op.kind) {
          case OpKind::F: out[op.stage].push_back("F" + mb); break;
          case OpKind::B: out[op.stage].push_back("B" + mb); break;
          case OpKind::W:
            out[op.stage].push_back("W" + mb);
            if (!planner::is_synchronous(s.kind)) out[op.stage].push_back("S");
            break;
          case OpKind::BW:
            out[op.stage].push_back("BW" + mb);
            if (!planner::is_synchronous(s.kind)) out[op.stage].push_back("S");
            break;
          case OpKind::step:
            for (int st = 0; st < s.num_stages; ++st)
              if (s.stage_device[st] == d) out[st].push_back("S");
            break;
          default: break;
        }
      }
  return out;
}
}  // namespace

TEST_CASE("runtime: a hand-written 2-device GPipe schedule runs in list order and is traced") {
  planner::Schedule s;
  s.kind = ScheduleKind::gpipe;
  s.num_devices = 2;
  s.num_stages = 2;
  s.num_micro_batches = 2;
  s.stage_device = {0, 1};
  for (int d = 0; d < 2; ++d)
    s.device_ops.push_back(
        {{OpKind::F, d, 0}, {OpKind::F, d, 1}, {OpKind::BW, d, 1}, {OpKind::BW, d, 0}, {OpKind::step, -1, -1}});
  FakeCompute fake(2);
  PipelineRuntime rt(s, fake, test_options());
  rt.run_iteration();
  for (int st = 0; st < 2; ++st) {
    CHECK(fake.state(st).log == std::vector<std::string>{"F0", "F1", "BW1", "BW0", "S"});
    CHECK(fake.state(st).steps_with_grads == 1);
  }
  const sim::Trace& tr = rt.trace();
  CHECK(tr.source == "measured");
  CHECK(tr.num_devices == 2);
  int ops = 0, transfers = 0;
  for (const auto& e : tr.events) {
    CHECK(e.end_ns >= e.start_ns);
    CHECK(e.start_ns >= 0);
    if (e.is_transfer) {
      ++transfers;
      CHECK(e.dst_device != e.device);
      CHECK(e.bytes == 16);  // 3 + 1 floats
    } else {
      ++ops;
    }
  }
  CHECK(ops == 10);
  CHECK(transfers == 4);  // 2 activations forward, 2 gradients backward
  // One memory sample per op; live micro-batches go 0 -> 2 -> 0.
  REQUIRE(tr.memory.size() == 10);
  int64_t peak0 = 0;
  for (const auto& m : tr.memory)
    if (m.device == 0) peak0 = std::max(peak0, m.bytes);
  CHECK(peak0 == 1200);
  CHECK(tr.memory.back().bytes == 1000);
}

TEST_CASE("runtime: every generated schedule with S <= 8, M <= 32 completes, in schedule order") {
  const ScheduleKind kinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b,      ScheduleKind::zb_h1,
                                ScheduleKind::zb_h2, ScheduleKind::interleaved_1f1b, ScheduleKind::pipedream_async,
                                ScheduleKind::two_bw};
  int runs = 0;
  for (ScheduleKind kind : kinds)
    for (int S : {1, 2, 3, 4, 5, 8})
      for (int M : {1, 2, 3, 4, 8, 16, 32}) {
        const int chunks = kind == ScheduleKind::interleaved_1f1b ? 2 : 1;
        if (kind == ScheduleKind::interleaved_1f1b && M % S != 0) continue;
        if (S >= 5 && M != 32 && M != 8) continue;  // keep the sweep fast; the large cases are the risky ones
        planner::Schedule s = planner::make_schedule(kind, S, M, chunks);
        CAPTURE(planner::to_string(kind));
        CAPTURE(S);
        CAPTURE(M);
        FakeCompute fake(s.num_stages);
        PipelineRuntime rt(s, fake, test_options());
        rt.run_iteration();
        rt.run_iteration();
        ++runs;
        const auto want = expected_logs(s, 2);
        for (int st = 0; st < s.num_stages; ++st) {
          CHECK(fake.state(st).log == want.at(st));
          CHECK(fake.state(st).live == 0);
        }
        size_t ops = 0;
        for (const auto& e : rt.trace().events) ops += e.is_transfer ? 0 : 1;
        CHECK(ops == 2 * s.num_ops());
      }
  CHECK(runs > 100);
}

TEST_CASE("runtime: a channel of capacity 1 still runs GPipe with many micro-batches in flight") {
  planner::Schedule s = planner::make_schedule(ScheduleKind::gpipe, 3, 16);
  FakeCompute fake(3);
  RuntimeOptions o = test_options();
  o.channel_capacity = 1;
  o.spin = std::chrono::nanoseconds(0);
  PipelineRuntime rt(s, fake, o);
  rt.run_iteration();
  CHECK(fake.state(2).log.size() == 33);
}

TEST_CASE("runtime: per-op events of a device do not overlap and follow the list order") {
  planner::Schedule s = planner::make_schedule(ScheduleKind::one_f_one_b, 2, 4);
  FakeCompute fake(2, std::chrono::microseconds(200));
  PipelineRuntime rt(s, fake, test_options());
  rt.run_iteration();
  for (int d = 0; d < 2; ++d) {
    std::vector<sim::TraceEvent> evs;
    for (const auto& e : rt.trace().events)
      if (!e.is_transfer && e.device == d) evs.push_back(e);
    REQUIRE(evs.size() == s.device_ops[d].size());
    for (size_t k = 0; k < evs.size(); ++k) {
      CHECK(evs[k].kind == s.device_ops[d][k].kind);
      CHECK(evs[k].micro_batch == s.device_ops[d][k].micro_batch);
      if (evs[k].kind != OpKind::step) CHECK(evs[k].end_ns - evs[k].start_ns >= 200000);
      if (k > 0) CHECK(evs[k].start_ns >= evs[k - 1].end_ns);
    }
  }
}

TEST_CASE("runtime: pipedream-async steps after every backward, vertical sync tags stage 0's version") {
  const int S = 3, M = 6;
  planner::Schedule s = planner::make_schedule(ScheduleKind::pipedream_async, S, M);
  FakeCompute fake(S);
  RuntimeOptions o = test_options();
  o.vertical_sync = true;
  PipelineRuntime rt(s, fake, o);
  rt.run_iteration();
  for (int st = 0; st < S; ++st) {
    CHECK(fake.state(st).version == M);
    CHECK(fake.state(st).steps_with_grads == M);
    // Every stage runs micro-batch j on the version stage 0 had when it ran F(0, j).
    CHECK(fake.state(st).versions == fake.state(0).versions);
  }
  // Stage 0 warms up with S forwards on version 0, then one step per backward.
  CHECK(fake.state(0).versions == std::vector<int64_t>{0, 0, 0, 1, 2, 3});
}

TEST_CASE("runtime: vertical sync is refused for synchronous schedules") {
  FakeCompute fake(2);
  RuntimeOptions o = test_options();
  o.vertical_sync = true;
  CHECK_THROWS_AS(PipelineRuntime(planner::make_schedule(ScheduleKind::gpipe, 2, 2), fake, o), InputError);
}

TEST_CASE("runtime: a compute failure stops every worker, is rethrown, and the runtime can run again") {
  planner::Schedule s = planner::make_schedule(ScheduleKind::one_f_one_b, 3, 4);
  FakeCompute fake(3);
  fake.fail_forward_ = 1;
  PipelineRuntime rt(s, fake, test_options());
  CHECK_THROWS_WITH_AS(rt.run_iteration(), "injected failure in stage 1", std::runtime_error);
  FakeCompute fresh(3);
  PipelineRuntime rt2(s, fresh, test_options());
  rt2.run_iteration();
  CHECK(fresh.state(2).steps_with_grads == 1);
}

TEST_CASE("runtime: at_iteration_start runs on every worker's thread once per iteration, inside its timing") {
  planner::Schedule s = planner::make_schedule(ScheduleKind::one_f_one_b, 2, 4);
  FakeCompute fake(2);
  RuntimeOptions o = test_options();
  std::mutex mu;
  std::vector<std::pair<int, int>> calls;  // (device, iteration)
  std::set<std::thread::id> threads;
  o.at_iteration_start = [&](int device, int iteration) {
    std::lock_guard<std::mutex> lock(mu);
    calls.emplace_back(device, iteration);
    threads.insert(std::this_thread::get_id());
  };
  PipelineRuntime rt(s, fake, o);
  for (int it = 0; it < 3; ++it) rt.run_iteration();
  std::vector<std::pair<int, int>> want;
  for (int it = 0; it < 3; ++it)
    for (int d = 0; d < 2; ++d) want.emplace_back(d, it);
  std::sort(calls.begin(), calls.end(),
            [](auto a, auto b) { return std::tie(a.second, a.first) < std::tie(b.second, b.first); });
  CHECK(calls == want);
  CHECK(threads.size() == 2);  // the workers' threads, not the caller's
  CHECK(threads.count(std::this_thread::get_id()) == 0);
  // A failing hook fails that iteration as a compute error does; the runtime runs on after it.
  // (Device 0's: no forward has run anywhere when it throws, so the fake's state stays clean.)
  bool fail = true;
  o.at_iteration_start = [&](int device, int) {
    if (device == 0 && fail) throw std::runtime_error("could not draw the next mini-batch");
  };
  FakeCompute fresh(2);
  PipelineRuntime rt2(s, fresh, o);
  CHECK_THROWS_WITH_AS(rt2.run_iteration(), "could not draw the next mini-batch", std::runtime_error);
  fail = false;
  rt2.run_iteration();
  CHECK(fresh.state(1).steps_with_grads == 1);
}

TEST_CASE("runtime: a worker stuck past the timeout is reported as a stall naming where each device waits") {
  planner::Schedule s = planner::make_schedule(ScheduleKind::gpipe, 2, 1);
  FakeCompute fake(2, std::chrono::microseconds(300000));  // every op takes 300 ms
  RuntimeOptions o;
  o.timeout = std::chrono::milliseconds(100);
  PipelineRuntime rt(s, fake, o);
  try {
    rt.run_iteration();
    FAIL("expected a stall");
  } catch (const PipelineStall& e) {
    const std::string msg = e.what();
    CHECK(msg.find("pipeline stalled after 100 ms") == 0);
    CHECK(msg.find("device 1 at F(1,0) waiting for it 0 stage 0 mb 0 fwd from device 0") != std::string::npos);
  }
}

TEST_CASE("runtime: a schedule that does not match the compute's stage count is refused") {
  FakeCompute fake(3);
  CHECK_THROWS_AS(PipelineRuntime(planner::make_schedule(ScheduleKind::gpipe, 2, 2), fake, test_options()), InputError);
}

TEST_CASE("runtime: workers are pinned to distinct cores when there are enough") {
  FakeCompute fake(2);
  PipelineRuntime rt(planner::make_schedule(ScheduleKind::gpipe, 2, 1), fake, test_options());
  REQUIRE(rt.placement().size() == 2);
  if (Machine::instance().num_cores() >= 2) {
    CHECK(rt.placement()[0].cores != rt.placement()[1].cores);
    CHECK(rt.warning().empty());
  }
}
