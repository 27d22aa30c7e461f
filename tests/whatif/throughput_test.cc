#include "whatif/throughput.h"

#include <doctest/doctest.h>

#include "models/error.h"
#include "whatif/charts.h"

using namespace pw::whatif;

namespace {

// 8 identical layers after a data source; outputs of 0 bytes: equal stages, free transfers.
pw::models::Profile equal_layers() {
  pw::models::Profile p;
  p.model = "equal";
  p.source = "measured";
  p.device.name = "synthetic";
  p.micro_batch = 1;
  pw::models::LayerProfile in;
  in.name = "input";
  in.kind = "input";
  in.is_data_loading = true;
  p.layers.push_back(in);
  for (int i = 0; i < 8; ++i) {
    pw::models::LayerProfile l;
    l.name = "l" + std::to_string(i);
    l.kind = "linear";
    l.forward_ns = 1000;
    l.backward_input_ns = 1000;
    l.backward_weight_ns = 1000;
    l.parameter_bytes = 1 << 20;
    l.stash_bytes = 1 << 10;
    p.layers.push_back(l);
    p.edges.push_back({i, i + 1});
  }
  return p;
}

}  // namespace

TEST_CASE("throughput grid: GPipe bubble (K-1)/(M+K-1) with equal stages and free transfers") {
  WhatifConfig c;
  c.batch = 32;
  c.recompute = "off";
  c.free_transfers = true;
  c.partitioner = "gpipe-greedy";
  pw::models::Profile p = equal_layers();
  ThroughputRequest r;
  r.stages = {2, 4, 8};
  r.micro_batches = {1, 4, 8, 32};
  r.schedules = {"gpipe", "1f1b"};
  r.profile = &p;
  r.threads = 2;
  std::vector<ThroughputCell> cells = throughput_grid(c, r);
  REQUIRE(cells.size() == 24);
  for (const ThroughputCell& cell : cells) {
    CAPTURE(cell.stages);
    CAPTURE(cell.micro_batches);
    CAPTURE(cell.schedule);
    REQUIRE(cell.feasible);
    CHECK(cell.stages_used == cell.stages);
    const double k = cell.stages, m = cell.micro_batches;
    CHECK(cell.bubble_rate == doctest::Approx((k - 1) / (m + k - 1)).epsilon(1e-9));
    // Iteration = (M + K - 1) slots of one micro-batch on one stage: (F + B + W) * (8/K layers)
    // * (32/M samples) ns.
    const double slot_ns = 3000.0 * (8 / k) * (32 / m);
    CHECK(cell.iteration_s == doctest::Approx((m + k - 1) * slot_ns * 1e-9).epsilon(1e-9));
  }
  // Baseline = first cell (K=2, M=1, gpipe): normalized = iteration(base) / iteration.
  CHECK(cells[0].normalized == doctest::Approx(1.0));
  const ThroughputCell& last = cells.back();  // K=8, M=32, 1f1b
  CHECK(last.normalized == doctest::Approx((2.0 * 3000 * 4 * 32) / (39.0 * 3000)).epsilon(1e-9));
  // GPipe keeps all M micro-batches in flight, 1F1B at most K - s on stage s.
  const ThroughputCell& g = cells[cells.size() - 2];
  CHECK(g.schedule == "gpipe");
  CHECK(g.stage_peak_memory_bytes.front() > last.stage_peak_memory_bytes.front());
  Table t = throughput_table(cells);
  CHECK(t.rows.size() == 24);
  CHECK(t.rows[0][t.column("normalized")] == 1.0);
  CHECK(throughput_svg(cells, "bubble").find("<polyline") != std::string::npos);
}

TEST_CASE("throughput grid: baseline and input checks") {
  WhatifConfig c;
  c.batch = 8;
  pw::models::Profile p = equal_layers();
  ThroughputRequest r;
  r.stages = {2};
  r.micro_batches = {1, 2};
  r.schedules = {"gpipe"};
  r.profile = &p;
  r.baseline_stages = 4;
  CHECK_THROWS_WITH_AS(throughput_grid(c, r), doctest::Contains("--baseline"), pw::InputError);
  r.baseline_stages = 0;
  r.micro_batches = {16};
  CHECK_THROWS_WITH_AS(throughput_grid(c, r), doctest::Contains("batch of at least 16"), pw::InputError);
  r.micro_batches = {};
  CHECK_THROWS_AS(throughput_grid(c, r), pw::InputError);
  r.micro_batches = {1};
  r.schedules = {"1f2b"};
  CHECK_THROWS_AS(throughput_grid(c, r), pw::InputError);
}
