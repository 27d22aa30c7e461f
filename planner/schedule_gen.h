// Schedule generators: the per-device op orders of the pipeline schedules Pipewright knows.
//
// p = num_devices, m = num_micro_batches, s = 0-based stage, v = chunks. Without chunks,
// virtual stage s runs on device s. Interleaved (v > 1): virtual stage c*p + d (model chunk c
// of device d) runs on device d, so the model's virtual stages go 0..p-1 on devices 0..p-1,
// then p..2p-1 on devices 0..p-1 again, and so on.
//
// Orders (each synchronous device list ends with one `step` op):
// - gpipe: F(s,0..m-1), then BW(s,m-1..0).
// - 1f1b (PipeDream-Flush): w = min(p-s-1, m) warm-up F; pairs (F(w+i), BW(i)); the
//   remaining BW.
// - interleaved-1f1b (Megatron-LM): m % p == 0; forward k of device d runs chunk
//   (k mod pv) / p of micro-batch (k / pv)*p + k mod p, backward k the chunks in reverse
//   order; warm-up min(2(p-d-1) + (v-1)p, vm) forwards, then (F, BW) pairs, then the rest.
//   v == 1 gives the 1f1b order.
// - zb-h1: the 1f1b order with BW split into B, W; W(j) right after B(j+s) (lag s); the W
//   still due at the end run last, in order.
// - zb-h2: w = min(2(p-s)-1, m) warm-up F; steady (B(i), W(i-2s) when due, F(w+i)); the
//   remaining B each followed by its due W; the remaining W last.
// - pipedream-async and 2bw (asynchronous, no flush, no step): one "iteration" is m
//   consecutive micro-batches of an unbounded 1F1B stream. The device list is that stream
//   restricted to the iteration's m micro-batches, i.e. the 1f1b order without the step:
//   w warm-up F, (F, BW) pairs, w trailing BW. Simulating K iterations back to back
//   (sim::simulate) interleaves iteration k's trailing BW with iteration k+1's warm-up F,
//   which is the steady state PipeDream runs. Weight versions (stashing for
//   pipedream-async, two buffers for 2bw) are a memory matter, not an op.
#pragma once

#include "planner/schedule.h"

namespace pw::planner {

// Throws InputError for impossible parameters: num_devices < 1, num_micro_batches < 1,
// chunks < 1, chunks > 1 with a kind other than interleaved-1f1b, interleaved with
// num_micro_batches not a multiple of num_devices.
Schedule make_schedule(ScheduleKind kind, int num_devices, int num_micro_batches, int chunks = 1);

}  // namespace pw::planner
