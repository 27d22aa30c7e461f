// Trace writers: Chrome trace structure, SVG well-formedness, trace JSON round trip.
#include <doctest/doctest.h>

#include <set>

#include "models/error.h"
#include "planner/schedule_gen.h"
#include "sim/engine.h"
#include "sim/trace_io.h"
#include "tests/sim/xml_check.h"

using namespace pw;

namespace {
sim::SimResult traced(planner::ScheduleKind kind, int p, int m, int v = 1) {
  sim::StageCosts c = sim::StageCosts::uniform(p * v, 1000, 2000, 500);
  c.stash_bytes_per_micro_batch.assign(p * v, 10);
  c.activation_bytes.assign(p * v, 4096);
  c.gradient_bytes.assign(p * v, 4096);
  return sim::simulate(planner::make_schedule(kind, p, m, v), c, sim::Network::fixed(250), {1, true});
}
}  // namespace

TEST_CASE("chrome trace: metadata, one track per device, ops named F3/B3/W3/BW3, transfers on their own tracks") {
  const auto r = traced(planner::ScheduleKind::zb_h1, 3, 4);
  const Json j = Json::parse(sim::chrome_trace_json(r.trace).dump());
  CHECK(j.at("format") == "pipewright.chrome-trace/1");  // viewers ignore unknown top-level keys
  REQUIRE(j.contains("traceEvents"));
  REQUIRE(j["traceEvents"].is_array());
  std::set<int> device_tracks, transfer_tracks;
  std::set<std::string> names;
  int complete = 0, counters = 0, thread_names = 0;
  for (const Json& e : j["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    REQUIRE(e.contains("name"));
    const std::string ph = e["ph"];
    if (ph == "X") {
      ++complete;
      REQUIRE(e["ts"].is_number());
      REQUIRE(e["dur"].is_number());
      CHECK(e["dur"].get<double>() >= 0);
      if (e["pid"] == 0) {
        device_tracks.insert(e["tid"].get<int>());
        names.insert(e["name"].get<std::string>());
      } else {
        CHECK(e["pid"] == 1);
        CHECK(e["cat"] == "transfer");
        transfer_tracks.insert(e["tid"].get<int>());
      }
    } else if (ph == "C") {
      ++counters;
      CHECK(e["args"]["bytes"].is_number_integer());
    } else {
      CHECK(ph == "M");
      if (e["name"] == "thread_name") ++thread_names;
    }
  }
  CHECK(device_tracks == std::set<int>{0, 1, 2});
  CHECK(transfer_tracks.size() == 4);  // 0->1, 1->2, 2->1, 1->0
  CHECK(names.count("F3") == 1);
  CHECK(names.count("B3") == 1);
  CHECK(names.count("W3") == 1);
  CHECK(names.count("step") == 1);
  CHECK(complete == static_cast<int>(r.trace.events.size()));
  CHECK(counters == static_cast<int>(r.trace.memory.size()));
  CHECK(thread_names == 3 + 4);
  const auto g = traced(planner::ScheduleKind::gpipe, 2, 4);
  const std::string dump = sim::chrome_trace_json(g.trace).dump();
  CHECK(dump.find("\"BW3\"") != std::string::npos);
}

TEST_CASE("svg timeline is well-formed XML with rows, boxes, labels, axis and the bubble rate") {
  for (auto [kind, v] : {std::pair{planner::ScheduleKind::one_f_one_b, 1},
                         {planner::ScheduleKind::zb_h2, 1},
                         {planner::ScheduleKind::interleaved_1f1b, 2}}) {
    const auto r = traced(kind, 4, 8, v);
    const std::string svg = sim::timeline_svg(r.trace, r.report, "title <&> \"quoted\"");
    CHECK(pw::test::xml_problem(svg) == "");
    CHECK(svg.find("device 3") != std::string::npos);
    CHECK(svg.find("bubble ") != std::string::npos);
    CHECK(svg.find("time (us)") != std::string::npos);  // unit follows the span (tens of us)
    CHECK(svg.find("title &lt;&amp;&gt; &quot;quoted&quot;") != std::string::npos);
    CHECK(svg.find(">7</text>") != std::string::npos);  // micro-batch numbers
  }
  CHECK(pw::test::xml_problem("<svg><g></svg>") != "");
  CHECK(pw::test::xml_problem("<svg a=1/>") != "");
  CHECK(pw::test::xml_problem("<svg>a & b</svg>") != "");
}

TEST_CASE("trace JSON round trip and bad input") {
  const auto r = traced(planner::ScheduleKind::one_f_one_b, 3, 5);
  Json j;
  to_json(j, r.trace);
  const sim::Trace back = sim::trace_from_json(Json::parse(j.dump()));
  CHECK(back.events.size() == r.trace.events.size());
  CHECK(back.memory.size() == r.trace.memory.size());
  const sim::RunInfo info{"1f1b", 3, 5, 1, 1};
  CHECK(sim::summarize(back, info) == r.report);
  Json bad = j;
  bad["events"][0]["op"] = "X";
  CHECK_THROWS_AS(sim::trace_from_json(bad), InputError);
  bad = j;
  bad["events"][0]["end_ns"] = -1;
  CHECK_THROWS_AS(sim::trace_from_json(bad), InputError);
  bad = j;
  bad["memory"][0] = "x";
  CHECK_THROWS_AS(sim::trace_from_json(bad), InputError);
}
