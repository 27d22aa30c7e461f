// Structure of the SVG timelines (sim/timeline_svg.h, sim/timeline_draw.h, sim/compare_svg.h):
// units and ticks, occupancy for thin boxes, iteration marks, warm-up, transfers.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "planner/schedule_gen.h"
#include "sim/compare_svg.h"
#include "sim/engine.h"
#include "sim/timeline_draw.h"
#include "sim/timeline_svg.h"
#include "tests/sim/xml_check.h"

using namespace pw;

namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

// Text contents of the elements carrying class="tick".
std::vector<std::string> tick_labels(const std::string& svg) {
  std::vector<std::string> out;
  for (size_t i = svg.find("class=\"tick\""); i != std::string::npos; i = svg.find("class=\"tick\"", i + 1)) {
    const size_t a = svg.find('>', i) + 1, b = svg.find('<', a);
    out.push_back(svg.substr(a, b - a));
  }
  return out;
}

// Sum of the width attributes of the elements carrying `cls`.
double width_sum(const std::string& svg, const std::string& cls) {
  double w = 0;
  for (size_t i = svg.find(cls); i != std::string::npos; i = svg.find(cls, i + 1)) {
    const size_t a = svg.find("width=\"", i) + 7;
    w += std::strtod(svg.c_str() + a, nullptr);
  }
  return w;
}

sim::SimResult simulated(planner::ScheduleKind kind, int p, int m, int64_t t_f, int iterations = 1) {
  sim::StageCosts c = sim::StageCosts::uniform(p, t_f, 2 * t_f, 0);
  c.activation_bytes.assign(p, 4096);
  c.gradient_bytes.assign(p, 4096);
  sim::SimOptions o;
  o.iterations = iterations;
  o.record_trace = true;
  return sim::simulate(planner::make_schedule(kind, p, m, 1), c, sim::Network::fixed(t_f / 20), o);
}

sim::TraceEvent op(int device, planner::OpKind k, int mb, int iteration, int64_t start, int64_t end) {
  sim::TraceEvent e;
  e.device = device;
  e.kind = k;
  e.micro_batch = mb;
  e.iteration = iteration;
  e.start_ns = start;
  e.end_ns = end;
  return e;
}

}  // namespace

TEST_CASE("time ticks: unit by span, 1/2/5 steps, at most 12 ticks") {
  const auto u = sim::draw::time_unit_for(189'131'000'000);
  CHECK(std::string(u.name) == "s");
  const auto ticks = sim::draw::time_ticks(189'131'000'000, u);
  REQUIRE(ticks.size() == 10);
  CHECK(ticks[1].label == "20");
  CHECK(ticks[9].label == "180");
  CHECK(ticks[9].ns == 180'000'000'000);
  CHECK(std::string(sim::draw::time_unit_for(999).name) == "ns");
  CHECK(std::string(sim::draw::time_unit_for(27'600).name) == "us");
  CHECK(std::string(sim::draw::time_unit_for(27'600'000).name) == "ms");
  const auto small = sim::draw::time_ticks(1'500'000, sim::draw::time_unit_for(1'500'000));  // 1.5 ms
  CHECK(small[1].label == "0.2");
  CHECK(small.back().label == "1.4");
}

TEST_CASE("large uniform timeline: seconds on the axis, occupancy without per-op outlines, transfers as link strips") {
  const auto r = simulated(planner::ScheduleKind::one_f_one_b, 8, 256, 100'000'000);  // 100 ms forward
  const std::string svg = sim::timeline_svg(r.trace, r.report, "large");
  CHECK(pw::test::xml_problem(svg) == "");
  CHECK(svg.find("time (s)") != std::string::npos);
  const auto labels = tick_labels(svg);
  CHECK(labels.size() >= 4);
  CHECK(labels.size() <= 12);
  for (const auto& l : labels) CHECK(std::strtod(l.c_str(), nullptr) < 1000);
  CHECK(count(svg, "class=\"op\"") == 0);
  CHECK(count(svg, "class=\"mb\"") == 0);
  CHECK(count(svg, "class=\"busy\"") > 0);
  CHECK(count(svg, "class=\"transfer-busy\"") > 0);
  CHECK(count(svg, "stroke=\"#ffffff\"") == 0);
}

TEST_CASE("occupancy inks exactly the busy share: a 14%-busy device is 14% inked") {
  sim::Trace t;
  t.source = "predicted";
  t.num_devices = 2;
  // Device 0: 100 ops of 14 ns every 100 ns (14% busy); device 1 idle but for one op at the end.
  for (int k = 0; k < 100; ++k) t.events.push_back(op(0, planner::OpKind::F, k, 0, 100 * k, 100 * k + 14));
  t.events.push_back(op(1, planner::OpKind::F, 0, 0, 9'986, 10'000));
  sim::Report rep;
  const std::string svg = sim::timeline_svg(t, rep, "busy");
  CHECK(count(svg, "class=\"op\"") == 0);
  const double plot_w = 1200 - 80 - 64;
  // Device 0's F band: 100 spans of 14 ns over a 10 us axis; device 1: one of 14 ns.
  CHECK(width_sum(svg, "class=\"busy\"") == doctest::Approx(plot_w * 0.14 + plot_w * 0.0014).epsilon(0.01));
  CHECK(svg.find(">14% busy<") != std::string::npos);
}

TEST_CASE("small timeline: boxes with numbers, one iteration mark per iteration, transfers as lines") {
  const auto r = simulated(planner::ScheduleKind::one_f_one_b, 4, 8, 1'000'000, 3);
  const std::string svg = sim::timeline_svg(r.trace, r.report, "three iterations");
  CHECK(pw::test::xml_problem(svg) == "");
  CHECK(count(svg, "class=\"iteration\"") == 3);
  CHECK(svg.find(">iteration 2<") != std::string::npos);
  int transfers = 0, ops = 0;
  for (const auto& e : r.trace.events) {
    transfers += e.is_transfer && e.dst_device != e.device;
    ops += !e.is_transfer && e.end_ns > e.start_ns;  // zero-length ops (the free step) are not drawn
  }
  CHECK(transfers > 0);
  CHECK(count(svg, "class=\"transfer\"") == transfers);
  CHECK(count(svg, "class=\"op\"") == ops);
  CHECK(count(svg, "class=\"warmup\"") == 0);  // predicted: nothing hidden
}

TEST_CASE("measured timeline: warm-up iterations detected, not drawn, and marked") {
  sim::Trace t;
  t.source = "measured";
  t.num_devices = 2;
  // Iterations 0 and 1 cold (500 and 300 us), 2..5 steady (100 us each).
  const int64_t len[] = {500'000, 300'000, 100'000, 100'000, 100'000, 100'000};
  int64_t at = 0;
  for (int k = 0; k < 6; ++k) {
    t.events.push_back(op(0, planner::OpKind::F, 0, k, at, at + len[k] / 2));
    t.events.push_back(op(1, planner::OpKind::BW, 0, k, at + len[k] / 2, at + len[k]));
    at += len[k];
  }
  CHECK(sim::detect_warmup_iterations(t) == 2);
  sim::Report rep;
  const std::string svg = sim::timeline_svg(t, rep, "measured");
  CHECK(pw::test::xml_problem(svg) == "");
  CHECK(count(svg, "class=\"warmup\"") == 1);
  CHECK(svg.find("not drawn: iterations 0-1 (0.800 ms): warm-up 0-1;") != std::string::npos);
  CHECK(count(svg, "class=\"iteration\"") == 4);  // iterations 2..5
  CHECK(svg.find(">iteration 2<") != std::string::npos);
  CHECK(count(svg, "class=\"op\"") == 8);
  CHECK(svg.find("time since iteration 2 (us)") != std::string::npos);
  // At most two steady iterations: 2 and 3 are earlier steady state, also not drawn.
  const std::string two = sim::timeline_svg(t, rep, "measured", {-1, 2});
  CHECK(count(two, "class=\"iteration\"") == 2);
  CHECK(two.find("warm-up 0-1, earlier steady-state 2-3") != std::string::npos);
  // An explicit warm-up count wins over detection.
  const std::string one = sim::timeline_svg(t, rep, "measured", {1, 10});
  CHECK(count(one, "class=\"iteration\"") == 5);
  // A predicted trace is never cut.
  t.source = "predicted";
  CHECK(sim::detect_warmup_iterations(t) == 0);
  CHECK(count(sim::timeline_svg(t, rep, "predicted"), "class=\"iteration\"") == 6);
}

TEST_CASE("compare picture: both traces on one axis, transfers kept by steady_iteration") {
  const auto p = simulated(planner::ScheduleKind::one_f_one_b, 2, 4, 1'000'000);
  auto measured = simulated(planner::ScheduleKind::one_f_one_b, 2, 4, 1'500'000, 3).trace;
  measured.source = "measured";
  const sim::Trace m = sim::steady_iteration(measured, 2);
  int transfers = 0;
  for (const auto& e : m.events) transfers += e.is_transfer;
  CHECK(transfers == 2 * 4);  // one activation and one gradient per micro-batch
  const std::string svg = sim::compare_svg(p.trace, m, "compare");
  CHECK(pw::test::xml_problem(svg) == "");
  CHECK(count(svg, "class=\"iteration\"") == 1);
  CHECK(count(svg, "class=\"transfer\"") == 2 * transfers);
  CHECK(svg.find("time since the iteration's first op (ms)") != std::string::npos);
}
