// A synthetic measured run for the replay and run-trace tests: `iterations` iterations of
// schedule `s`, each simulated alone (a barrier between them, as the runtime runs them) with
// the costs costs_of(k), numbered k and laid one after another with `gap_ns` between them.
#pragma once

#include <cstdint>
#include <functional>

#include "planner/schedule.h"
#include "sim/engine.h"

namespace pw::sim {

inline Trace stacked_run(const planner::Schedule& s, int iterations, int64_t gap_ns,
                         const std::function<StageCosts(int)>& costs_of, const Network& net = {}) {
  Trace all;
  all.num_devices = s.num_devices;
  int64_t offset = 0;
  for (int k = 0; k < iterations; ++k) {
    SimOptions o;
    o.record_trace = true;
    SimResult r = simulate(s, costs_of(k), net, o);
    for (TraceEvent e : r.trace.events) {
      e.iteration = k;
      e.start_ns += offset;
      e.end_ns += offset;
      all.events.push_back(e);
    }
    offset += r.report.makespan_ns + gap_ns;
  }
  return all;
}

}  // namespace pw::sim
