// Hand-off latency of the in-process runtime ("everything the runtime spends is in
// the model"): the time from a worker's send of a cut tensor to the moment the receiving
// worker, already waiting for it, has it in hand and resumes.
//
// The latency depends on how the receiver waits (InProcTransport: spin, then sleep on a
// condition variable): a receiver still spinning takes the message within microseconds, a
// sleeping one must be woken by the sender first (76-100 us on this project's VM). The
// runtime's spin is chosen per run (exec/machine_load.h, transport_spin: 5 ms on a quiet
// machine with a core per worker, else 50 us), and a pipeline worker's typical wait is a few
// hundred microseconds, so measure_handoff_ns() measures with the spin the run will use:
// two threads pinned as two pipeline workers are (co_run), the sender waits `idle` before
// each send (the receiver has gone to sleep when `idle` exceeds `spin`, and still spins when
// it does not), and the latency of each of `trials` messages is the receiver's clock when its
// receive completes minus the sender's clock at isend. Returns the median (ns).
// The simulator then charges it to every transfer between distinct devices
// (sim::Network::fixed), and `simulate --replay` does the same with the recorded value.
// On a machine with one core both threads share it and the figure includes a context switch.
#pragma once

#include <chrono>
#include <cstdint>

#include "exec/machine/machine_load.h"

namespace pw::exec {

struct HandoffOptions {
  int trials = 41;
  std::chrono::microseconds idle{300};                    // a typical wait in a pipeline bubble
  std::chrono::nanoseconds spin = kDefaultTransportSpin;  // the run's RuntimeOptions::spin
};

int64_t measure_handoff_ns(const HandoffOptions& options = {});

}  // namespace pw::exec
