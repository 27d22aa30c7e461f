// Trace: what happened (measured by exec/) or what will happen (predicted by sim/), in one
// type, so that a run and its simulation can be compared and drawn the same way.
//
// One event per executed op; transfers are events too (is_transfer, with src/dst device).
// Times are integer nanoseconds from the start of the run (or of the simulated iteration 0).
// Memory samples are (device, time, live bytes) points, in time order per device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/schedule.h"

namespace pw::sim {

struct TraceEvent {
  int device = 0;  // compute device; for a transfer, the sending device
  planner::OpKind kind = planner::OpKind::F;
  int stage = 0;        // virtual stage (-1 for step)
  int micro_batch = 0;  // -1 where not applicable
  int iteration = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t bytes = 0;  // transfer payload
  bool is_transfer = false;
  int dst_device = -1;  // receiving device of a transfer
};

struct MemorySample {
  int device = 0;
  int64_t time_ns = 0;
  int64_t bytes = 0;
};

struct Trace {
  std::string source;  // "predicted" or "measured"
  int num_devices = 0;
  std::vector<TraceEvent> events;
  std::vector<MemorySample> memory;
};

}  // namespace pw::sim
