// Hand-computed two-stage cases (non-zero transfers, unequal stages), memory, iterations.
#include <doctest/doctest.h>

#include <map>
#include <tuple>

#include "models/error.h"
#include "planner/schedule_gen.h"
#include "sim/engine.h"

using namespace pw;
using planner::OpKind;
using planner::ScheduleKind;

namespace {

using OpKey = std::tuple<int, OpKind, int>;  // device, kind, micro-batch
std::map<OpKey, std::pair<int64_t, int64_t>> compute_times(const sim::Trace& t) {
  std::map<OpKey, std::pair<int64_t, int64_t>> out;
  for (const auto& e : t.events)
    if (!e.is_transfer) out[{e.device, e.kind, e.micro_batch}] = {e.start_ns, e.end_ns};
  return out;
}

sim::StageCosts two_stage(int64_t f0, int64_t b0, int64_t w0, int64_t f1, int64_t b1, int64_t w1) {
  sim::StageCosts c = sim::StageCosts::uniform(2, 0, 0, 0);
  c.forward_ns = {f0, f1};
  c.backward_input_ns = {b0, b1};
  c.backward_weight_ns = {w0, w1};
  return c;
}

}  // namespace

TEST_CASE("1f1b, 2 unequal stages, fixed 1 ns hop: exact op starts and makespan") {
  // Stage 0: F 3, BW 4+1; stage 1: F 2, BW 5+1; every hop 1 ns; m = 3.
  const auto s = planner::make_schedule(ScheduleKind::one_f_one_b, 2, 3);
  const auto r = sim::simulate(s, two_stage(3, 4, 1, 2, 5, 1), sim::Network::fixed(1), {1, true});
  const auto t = compute_times(r.trace);
  using P = std::pair<int64_t, int64_t>;
  CHECK(t.at({0, OpKind::F, 0}) == P{0, 3});
  CHECK(t.at({0, OpKind::F, 1}) == P{3, 6});
  CHECK(t.at({1, OpKind::F, 0}) == P{4, 6});
  CHECK(t.at({1, OpKind::BW, 0}) == P{6, 12});
  CHECK(t.at({1, OpKind::F, 1}) == P{12, 14});
  CHECK(t.at({0, OpKind::BW, 0}) == P{13, 18});
  CHECK(t.at({1, OpKind::BW, 1}) == P{14, 20});
  CHECK(t.at({0, OpKind::F, 2}) == P{18, 21});
  CHECK(t.at({0, OpKind::BW, 1}) == P{21, 26});
  CHECK(t.at({1, OpKind::F, 2}) == P{22, 24});
  CHECK(t.at({1, OpKind::BW, 2}) == P{24, 30});
  CHECK(t.at({0, OpKind::BW, 2}) == P{31, 36});
  CHECK(r.report.makespan_ns == 36);
  CHECK(r.report.cost_ns == 36);
  CHECK(r.report.devices[0].busy_ns == 24);
  CHECK(r.report.devices[1].span_ns == 26);
  CHECK(r.report.devices[1].idle_ns == 2);
  CHECK(r.report.bubble_rate == doctest::Approx(12.0 / 36.0));
}

TEST_CASE("gpipe, 2 unequal stages on a cluster link: transfers queue on the link") {
  // 1 byte/ns, 2 ns latency: an activation of 5 bytes occupies the link 5 ns, arrives 7 ns
  // after it starts; gradients of 3 bytes occupy 3 ns.
  const models::Cluster cl("pair", models::DeviceSpec{}, {models::Level{"flat", 2, 1e9, 2}});
  sim::StageCosts c = two_stage(2, 3, 1, 1, 2, 1);
  c.activation_bytes = {5, 0};
  c.gradient_bytes = {0, 3};
  const auto s = planner::make_schedule(ScheduleKind::gpipe, 2, 3);
  const auto r = sim::simulate(s, c, sim::Network::from_cluster(cl, {0, 1}), {1, true});
  const auto t = compute_times(r.trace);
  using P = std::pair<int64_t, int64_t>;
  CHECK(t.at({1, OpKind::F, 0}) == P{9, 10});
  CHECK(t.at({1, OpKind::F, 1}) == P{14, 15});
  CHECK(t.at({1, OpKind::F, 2}) == P{19, 20});
  CHECK(t.at({1, OpKind::BW, 2}) == P{20, 23});
  CHECK(t.at({1, OpKind::BW, 1}) == P{23, 26});
  CHECK(t.at({1, OpKind::BW, 0}) == P{26, 29});
  CHECK(t.at({0, OpKind::BW, 2}) == P{28, 32});
  CHECK(t.at({0, OpKind::BW, 1}) == P{32, 36});
  CHECK(t.at({0, OpKind::BW, 0}) == P{36, 40});
  CHECK(r.report.makespan_ns == 40);
  std::vector<std::pair<int64_t, int64_t>> fwd;
  for (const auto& e : r.trace.events)
    if (e.is_transfer && e.device == 0) {
      CHECK(e.dst_device == 1);
      CHECK(e.bytes == 5);
      fwd.push_back({e.start_ns, e.end_ns});
    }
  CHECK(fwd == std::vector<std::pair<int64_t, int64_t>>{{2, 9}, {7, 14}, {12, 19}});
}

TEST_CASE("iterations: synchronous runs back to back, report from the trace equals the engine's") {
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1, ScheduleKind::zb_h2,
                            ScheduleKind::pipedream_async, ScheduleKind::two_bw}) {
    CAPTURE(kind);
    const auto s = planner::make_schedule(kind, 4, 8);
    sim::StageCosts c = sim::StageCosts::uniform(4, 10, 12, 8);
    c.stash_bytes_per_micro_batch.assign(4, 100);
    c.parameter_bytes.assign(4, 1000);
    c.weights_optimizer_bytes.assign(4, 4000);
    c.working_bytes.assign(4, 7);
    c.samples_per_micro_batch = 2;
    const auto r = sim::simulate(s, c, sim::Network::fixed(3), {3, true});
    const auto again = sim::summarize(r.trace, {std::string(to_string(kind)), 4, 8, 3, 2});
    CHECK(again == r.report);
    CHECK(r.report.iterations == 3);
    CHECK(r.report.samples_per_iteration == 16);
  }
}

TEST_CASE("pipedream-async steady state: one micro-batch per slowest-stage time") {
  const auto s = planner::make_schedule(ScheduleKind::pipedream_async, 4, 8);
  const auto one = sim::simulate(s, sim::StageCosts::uniform(4, 10, 20, 0), sim::Network{}, {1, false});
  const auto many = sim::simulate(s, sim::StageCosts::uniform(4, 10, 20, 0), sim::Network{}, {6, false});
  CHECK(one.report.iteration_ns == (8 + 3) * 30);
  CHECK(many.report.iteration_ns == 8 * 30);  // no flush: period m * (T_F + T_BW)
  const auto sync = sim::simulate(planner::make_schedule(ScheduleKind::one_f_one_b, 4, 8),
                                  sim::StageCosts::uniform(4, 10, 20, 0), sim::Network{}, {6, false});
  CHECK(sync.report.iteration_ns == (8 + 3) * 30);
}

TEST_CASE("memory: weights, 2bw second buffer, async stashed versions, recompute") {
  const int p = 4, m = 8;
  sim::StageCosts c = sim::StageCosts::uniform(p, 10, 10, 10);
  c.weights_optimizer_bytes.assign(p, 1000000);
  c.parameter_bytes.assign(p, 10000);
  c.stash_bytes_per_micro_batch.assign(p, 100);
  c.input_bytes_per_micro_batch.assign(p, 1);
  auto peak = [&](ScheduleKind k, const sim::StageCosts& cc, int s) {
    return sim::simulate(planner::make_schedule(k, p, m), cc, sim::Network{}).report.devices[s].peak_memory_bytes;
  };
  CHECK(peak(ScheduleKind::gpipe, c, 0) == 1000000 + m * 100);
  CHECK(peak(ScheduleKind::one_f_one_b, c, 1) == 1000000 + (p - 1) * 100);
  CHECK(peak(ScheduleKind::two_bw, c, 0) == 1000000 + 10000 + p * 100);
  CHECK(peak(ScheduleKind::pipedream_async, c, 0) == 1000000 + (p - 1) * 10000 + p * 100);
  sim::StageCosts rc = c;
  rc.recompute.assign(p, 1);
  // Stage 0 with recompute: p inputs in flight, plus one re-forward's stash during BW.
  CHECK(peak(ScheduleKind::one_f_one_b, rc, 0) == 1000000 + p * 1 + 100);
  // Recompute lengthens the backward by one forward.
  const auto r = sim::simulate(planner::make_schedule(ScheduleKind::gpipe, p, m), rc, sim::Network{}).report;
  CHECK(r.makespan_ns == (m + p - 1) * 40);
}

TEST_CASE("bad input: iterations, cost sizes, negative costs") {
  const auto s = planner::make_schedule(ScheduleKind::one_f_one_b, 2, 2);
  CHECK_THROWS_AS(sim::simulate(s, sim::StageCosts::uniform(2, 1, 1, 1), sim::Network{}, {0, false}), InputError);
  CHECK_THROWS_AS(sim::simulate(s, sim::StageCosts::uniform(3, 1, 1, 1), sim::Network{}), InputError);
  CHECK_THROWS_AS(sim::simulate(s, sim::StageCosts::uniform(2, -1, 1, 1), sim::Network{}), InputError);
  CHECK_THROWS_AS(sim::Network::fixed(-5), InputError);
}

// Simulated time and a device's live bytes are int64: past 2^63 they are refused with one line,
// never wrapped into a shorter makespan or a negative peak (a 10,000-micro-batch run of 1e9 ms
// ops printed a makespan of 1.55e12 ms instead of 2e13).
TEST_CASE("bad input: simulated time or memory past 2^63 is refused, not wrapped") {
  const auto s = planner::make_schedule(ScheduleKind::gpipe, 1, 10);
  // 10 x (F + BW) of 4e17 ns each: 8e18 ns, just inside int64, is simulated exactly.
  CHECK(sim::simulate(s, sim::StageCosts::uniform(1, 400000000000000000, 400000000000000000, 0), sim::Network{})
            .report.makespan_ns == 8000000000000000000);
  CHECK_THROWS_WITH_AS(
      sim::simulate(s, sim::StageCosts::uniform(1, 500000000000000000, 500000000000000000, 0), sim::Network{}),
      doctest::Contains("simulate: the simulated time passes 2^63 ns"), InputError);
  // Each hop 5e18 ns: the second micro-batch's arrival would pass 2^63.
  CHECK_THROWS_WITH_AS(sim::simulate(planner::make_schedule(ScheduleKind::one_f_one_b, 2, 2),
                                     sim::StageCosts::uniform(2, 1, 1, 1), sim::Network::fixed(5000000000000000000)),
                       doctest::Contains("the simulated time passes 2^63 ns"), InputError);
  // gpipe holds all 10 micro-batches' stashes at once: 10 x 1e18 bytes.
  sim::StageCosts big = sim::StageCosts::uniform(1, 1, 1, 0);
  big.stash_bytes_per_micro_batch = {1000000000000000000};
  CHECK_THROWS_WITH_AS(sim::simulate(s, big, sim::Network{}), doctest::Contains("device 0's memory passes 2^63 bytes"),
                       InputError);
}

TEST_CASE("memory: weight_pending_bytes are held from a split B to its W, not by a fused BW") {
  for (ScheduleKind kind : {ScheduleKind::zb_h1, ScheduleKind::one_f_one_b}) {
    CAPTURE(kind);
    const auto s = planner::make_schedule(kind, 1, 1);
    sim::StageCosts c = sim::StageCosts::uniform(1, 10, 12, 8);
    c.weights_optimizer_bytes.assign(1, 1000);
    c.stash_bytes_per_micro_batch.assign(1, 100);
    c.weight_pending_bytes_per_micro_batch.assign(1, 30);
    const auto r = sim::simulate(s, c, sim::Network{}, {1, true});
    CHECK(r.report.devices[0].peak_memory_bytes == (kind == ScheduleKind::zb_h1 ? 1130 : 1100));
    CHECK(r.trace.memory.back().bytes == 1000);  // all released at the end
  }
  sim::StageCosts bad = sim::StageCosts::uniform(2, 1, 1, 1);
  bad.weight_pending_bytes_per_micro_batch.assign(1, 0);
  CHECK_THROWS_AS(bad.validate(2, 1), pw::InputError);
}

TEST_CASE(
    "data phase: a device busy drawing data at each iteration's start, hidden in its fill bubble up to its length") {
  // 1f1b, stage 0: F 3, BW 4+1; stage 1: F 2, BW 5+1; hop 1 ns; m = 3 (makespan 36, above).
  // Device 1 first needs F(0,0), which arrives at 4: a draw of up to 4 ns on device 1 is free.
  const auto s = planner::make_schedule(ScheduleKind::one_f_one_b, 2, 3);
  sim::StageCosts c = two_stage(3, 4, 1, 2, 5, 1);
  const auto base = sim::simulate(s, c, sim::Network::fixed(1), {1, true});
  c.data_ns = {0, 4};
  const auto hidden = sim::simulate(s, c, sim::Network::fixed(1), {1, true});
  CHECK(hidden.report.makespan_ns == base.report.makespan_ns);
  CHECK(compute_times(hidden.trace).at({1, OpKind::F, 0}) == std::pair<int64_t, int64_t>{4, 6});
  CHECK(hidden.report.devices[1].busy_ns == base.report.devices[1].busy_ns + 4);
  // 7 ns: F(1,0) starts at 7 instead of 4, and every later op of the critical path with it.
  c.data_ns = {0, 7};
  const auto longer = sim::simulate(s, c, sim::Network::fixed(1), {1, true});
  CHECK(compute_times(longer.trace).at({1, OpKind::F, 0}) == std::pair<int64_t, int64_t>{7, 9});
  CHECK(longer.report.makespan_ns == base.report.makespan_ns + 3);
  // On the first device it delays everything: one iteration, then every iteration of several.
  c.data_ns = {5, 0};
  CHECK(sim::simulate(s, c, sim::Network::fixed(1)).report.makespan_ns == base.report.makespan_ns + 5);
  sim::SimOptions two;
  two.iterations = 2;
  const int64_t base2 = sim::simulate(s, two_stage(3, 4, 1, 2, 5, 1), sim::Network::fixed(1), two).report.makespan_ns;
  CHECK(sim::simulate(s, c, sim::Network::fixed(1), two).report.makespan_ns == base2 + 10);
  // Asynchronous schedules have no iteration start: ignored.
  const auto a = planner::make_schedule(ScheduleKind::pipedream_async, 2, 3);
  sim::StageCosts ca = two_stage(3, 4, 1, 2, 5, 1);
  const int64_t async_base = sim::simulate(a, ca, sim::Network::fixed(1)).report.makespan_ns;
  ca.data_ns = {5, 5};
  CHECK(sim::simulate(a, ca, sim::Network::fixed(1)).report.makespan_ns == async_base);
  // Sizes and signs are checked like the other per-device costs.
  c.data_ns = {1};
  CHECK_THROWS_AS(sim::simulate(s, c, sim::Network{}), InputError);
  c.data_ns = {0, -1};
  CHECK_THROWS_AS(sim::simulate(s, c, sim::Network{}), InputError);
}
