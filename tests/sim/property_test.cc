// Property tests on random costs and orders.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>

#include "models/error.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"
#include "sim/engine.h"

using namespace pw;
using planner::Op;
using planner::OpKind;
using planner::ScheduleKind;

namespace {

const ScheduleKind kKinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved_1f1b,
                               ScheduleKind::zb_h1, ScheduleKind::zb_h2,       ScheduleKind::pipedream_async,
                               ScheduleKind::two_bw};

// Keys of compute ops: (kind, stage, micro-batch); BW and B both satisfy "backward done".
using SlotKey = std::tuple<int, int, int>;

// Naive reference: sweep all devices until nothing changes; returns false when stuck.
// With `end` given, also computes op end times (free of link contention).
bool reference_run(const planner::Schedule& s, const sim::StageCosts* c, int64_t hop, int64_t* makespan) {
  std::map<SlotKey, int64_t> done;  // end time
  std::vector<size_t> pos(s.num_devices, 0);
  std::vector<int64_t> free_at(s.num_devices, 0);
  auto dur = [&](const Op& op) -> int64_t {
    if (!c) return 0;
    switch (op.kind) {
      case OpKind::F: return c->forward_ns[op.stage];
      case OpKind::B: return c->backward_input_ns[op.stage];
      case OpKind::W: return c->backward_weight_ns[op.stage];
      case OpKind::BW: return c->backward_input_ns[op.stage] + c->backward_weight_ns[op.stage];
      default: return 0;
    }
  };
  auto arrival = [&](int kind, int st, int j, int to_dev, int64_t& t) {
    auto it = done.find({kind, st, j});
    if (it == done.end()) return false;
    t = std::max(t, it->second + (s.stage_device[st] != to_dev ? hop : 0));
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int d = 0; d < s.num_devices; ++d)
      while (pos[d] < s.device_ops[d].size()) {
        const Op& op = s.device_ops[d][pos[d]];
        int64_t t = free_at[d];
        bool ok = true;
        if (op.kind == OpKind::F && op.stage > 0) ok = arrival(0, op.stage - 1, op.micro_batch, d, t);
        if (op.kind == OpKind::B || op.kind == OpKind::BW) {
          ok = arrival(0, op.stage, op.micro_batch, d, t);
          if (ok && op.stage + 1 < s.num_stages) ok = arrival(1, op.stage + 1, op.micro_batch, d, t);
        }
        if (op.kind == OpKind::W) ok = arrival(1, op.stage, op.micro_batch, d, t);
        if (!ok) break;
        free_at[d] = t + dur(op);
        if (op.kind == OpKind::F) done[{0, op.stage, op.micro_batch}] = free_at[d];
        if (op.kind == OpKind::B || op.kind == OpKind::BW) done[{1, op.stage, op.micro_batch}] = free_at[d];
        ++pos[d];
        progress = true;
      }
  }
  for (int d = 0; d < s.num_devices; ++d)
    if (pos[d] < s.device_ops[d].size()) return false;
  if (makespan) *makespan = *std::max_element(free_at.begin(), free_at.end());
  return true;
}

}  // namespace

TEST_CASE("random costs: makespan equals the contention-free reference, >= critical path and busiest device") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 300; ++trial) {
    const ScheduleKind kind = kKinds[rng() % 7];
    const int p = 1 + static_cast<int>(rng() % 6);
    const int v = kind == ScheduleKind::interleaved_1f1b ? 1 + static_cast<int>(rng() % 3) : 1;
    const int m = kind == ScheduleKind::interleaved_1f1b ? p * (1 + static_cast<int>(rng() % 3))
                                                         : 1 + static_cast<int>(rng() % 10);
    const auto s = planner::make_schedule(kind, p, m, v);
    sim::StageCosts c = sim::StageCosts::uniform(s.num_stages, 0, 0, 0);
    for (int st = 0; st < s.num_stages; ++st) {
      c.forward_ns[st] = rng() % 1000;
      c.backward_input_ns[st] = rng() % 2000;
      c.backward_weight_ns[st] = rng() % 1000;
    }
    const int64_t hop = rng() % 300;
    CAPTURE(trial);
    const auto r = sim::simulate(s, c, sim::Network::fixed(hop)).report;
    int64_t ref = -1;
    REQUIRE(reference_run(s, &c, hop, &ref));
    CHECK(r.makespan_ns == ref);
    // Critical path of one micro-batch: all forwards, then all backward inputs, then a W.
    int64_t path = 0;
    for (int st = 0; st < s.num_stages; ++st) path += c.forward_ns[st] + c.backward_input_ns[st];
    path += (s.num_stages > 1 ? 2 * (s.num_stages - 1) : 0) * (p > 1 ? hop : 0) + c.backward_weight_ns[0];
    CHECK(r.makespan_ns >= path);
    for (const auto& d : r.devices) CHECK(r.makespan_ns >= d.busy_ns);
  }
}

TEST_CASE("the validator rejects every deadlocking order (random adjacent swaps), accepts the others") {
  std::mt19937 rng(777);
  int rejected = 0, accepted = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const ScheduleKind kind = kKinds[rng() % 7];
    const int p = 2 + static_cast<int>(rng() % 4);
    const int v = kind == ScheduleKind::interleaved_1f1b ? 2 : 1;
    const int m = kind == ScheduleKind::interleaved_1f1b ? p : 1 + static_cast<int>(rng() % 6);
    auto s = planner::make_schedule(kind, p, m, v);
    const int swaps = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < swaps; ++k) {
      auto& ops = s.device_ops[rng() % p];
      const size_t n = ops.size() - (planner::is_synchronous(kind) ? 1 : 0);  // keep step last
      if (n < 2) continue;
      const size_t i = rng() % (n - 1);
      std::swap(ops[i], ops[i + 1]);
    }
    CAPTURE(trial);
    const bool ok = reference_run(s, nullptr, 0, nullptr);
    if (ok) {
      CHECK_NOTHROW(planner::validate_schedule(s));
      ++accepted;
    } else {
      ++rejected;
      try {
        planner::validate_schedule(s);
        FAIL("validator accepted a deadlocking order");
      } catch (const InputError& e) { CHECK(std::string(e.what()).find("deadlock: device ") != std::string::npos); }
      sim::SimOptions o;
      o.validate = false;
      CHECK_THROWS_AS(sim::simulate(s, sim::StageCosts::uniform(s.num_stages, 1, 1, 1), sim::Network{}, o), InputError);
    }
  }
  CHECK(rejected > 50);
  CHECK(accepted > 50);
}
