// What `run --compare --device cuda` adds (exec/runtime/device_compare.h), on the host: the
// cards of a run's lanes, the shared-card bound and the card's peak memory over hand-made
// traces with exact expected values, and the note.
#include "exec/runtime/device_compare.h"

#include <doctest/doctest.h>

#include "exec/runtime/device_lanes.h"

using namespace pw;
using namespace pw::exec;
using planner::OpKind;

namespace {

sim::TraceEvent op(int device, OpKind kind, int64_t start, int64_t end) {
  sim::TraceEvent e;
  e.device = device;
  e.kind = kind;
  e.start_ns = start;
  e.end_ns = end;
  return e;
}

// Two workers, 1F1B-like, one micro-batch each way: device 0 computes 10 + 30 + 5 (step),
// device 1 computes 20 + 25 + 7 (step); a transfer of 4 ns between them is not compute.
sim::Trace two_workers() {
  sim::Trace t;
  t.num_devices = 2;
  t.events = {op(0, OpKind::F, 0, 10),  op(1, OpKind::F, 14, 34),    op(1, OpKind::B, 34, 59),
              op(0, OpKind::B, 63, 93), op(0, OpKind::step, 93, 98), op(1, OpKind::step, 59, 66)};
  sim::TraceEvent send = op(0, OpKind::send, 10, 14);
  send.is_transfer = true;
  send.dst_device = 1;
  t.events.push_back(send);
  return t;
}

}  // namespace

TEST_CASE("device_compare: the cards of a run's lanes, in order of first use") {
  const std::vector<Card> one = cards_of_lanes(pipeline_lanes(4, Device::cuda(0), 1));
  REQUIRE(one.size() == 1);
  CHECK(one[0].gpu == Device::cuda(0));
  CHECK(one[0].workers == std::vector<int>{0, 1, 2, 3});
  const std::vector<Card> two = cards_of_lanes(pipeline_lanes(3, Device::cuda(1), 2));
  REQUIRE(two.size() == 2);
  CHECK(two[0].gpu == Device::cuda(1));
  CHECK(two[0].workers == std::vector<int>{0, 1});
  CHECK(two[1].gpu == Device::cuda(2));
  CHECK(two[1].workers == std::vector<int>{2});
}

TEST_CASE("device_compare: busy time and the shared-card bound") {
  const sim::Trace t = two_workers();
  CHECK(busy_ns(t, 0) == 45);
  CHECK(busy_ns(t, 1) == 52);
  const int64_t iteration = 98;
  // One card: no shorter than 45 + 52 = 97 of work... which the simulated 98 already exceeds.
  CHECK(shared_card_bound_ns(t, iteration, {{Device::cuda(0), {0, 1}}}) == 98);
  // A shorter simulated iteration (the streams overlapping) is raised to the card's work.
  CHECK(shared_card_bound_ns(t, 60, {{Device::cuda(0), {0, 1}}}) == 97);
  // Two cards: each holds one worker, the bound is the simulated iteration.
  CHECK(shared_card_bound_ns(t, 60, {{Device::cuda(0), {0}}, {Device::cuda(1), {1}}}) == 60);
}

TEST_CASE("device_compare: a card's peak is the largest sum of its workers' live bytes at one instant") {
  sim::Trace t;
  t.memory = {{0, 0, 100}, {1, 0, 50}, {0, 10, 300}, {1, 20, 400}, {0, 30, 100}, {1, 40, 60}, {0, 50, 250}};
  // 100, 150, 350, 700 (300 + 400), 500, 160, 310.
  CHECK(card_peak_bytes(t, {0, 1}) == 700);
  CHECK(card_peak_bytes(t, {0}) == 300);
  CHECK(card_peak_bytes(t, {1}) == 400);
  CHECK(card_peak_bytes(t, {2}) == 0);
}

TEST_CASE("device_compare: the note names the shared cards, none when every card has one worker") {
  CHECK(shared_card_note({{Device::cuda(0), {0}}, {Device::cuda(1), {1}}}).empty());
  CHECK(shared_card_note({{Device::cuda(0), {0, 1, 2, 3}}}) ==
        "note: workers share a GPU (4 on cuda:0: streams of one card); the simulation treats each as a device of its "
        "own, so its prediction is an optimistic bound");
  CHECK(shared_card_note({{Device::cuda(0), {0, 1}}, {Device::cuda(1), {2, 3}}}).find("2 on cuda:0, 2 on cuda:1") !=
        std::string::npos);
}
