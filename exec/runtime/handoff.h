// Hand-off latency of the in-process runtime (issue 12, "everything the runtime spends is in
// the model"): the time from a worker's send of a cut tensor to the moment the receiving
// worker, already waiting for it, has it in hand and resumes.
//
// In a pipeline the receiver has usually been waiting longer than the transport's spin
// (InProcTransport: spin, then sleep on a condition variable), so the latency that matters is
// the cold one: a sleeping thread woken by the sender. measure_handoff_ns() measures exactly
// that with the runtime's own transport: two threads pinned as two pipeline workers are
// (co_run), the sender waits `idle` (longer than the spin) before each send so that the
// receiver has gone to sleep, and the latency of each of `trials` messages is the receiver's
// clock when its receive completes minus the sender's clock at isend. Returns the median (ns).
// The simulator then charges it to every transfer between distinct devices
// (sim::Network::fixed), and `simulate --replay` does the same with the recorded value.
// On a machine with one core both threads share it and the figure includes a context switch.
#pragma once

#include <chrono>
#include <cstdint>

namespace pw::exec {

struct HandoffOptions {
  int trials = 41;
  std::chrono::microseconds idle{300};  // > the transport's spin, so the receiver sleeps
  std::chrono::microseconds spin{50};   // as PipelineOptions::spin
};

int64_t measure_handoff_ns(const HandoffOptions& options = {});

}  // namespace pw::exec
